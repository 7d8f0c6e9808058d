// The HTTP receiver (issue 3). Placeholder until the receiver lands.
public enum PostbackServerPlaceholder {}

// The libcurl client behind `postback send` (issue 3). Placeholder until it lands.
public enum PostbackClientPlaceholder {}

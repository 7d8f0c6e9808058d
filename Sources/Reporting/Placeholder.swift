// The static HTML report (issue 6). Placeholder until it lands.
public enum ReportingPlaceholder {}

// Conversion schemas and the nightly aggregation (issue 4). Placeholder until it lands.
public enum AggregationPlaceholder {}

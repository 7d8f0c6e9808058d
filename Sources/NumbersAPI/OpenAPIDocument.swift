import Basics

/// The API's one description, OpenAPI 3.1, served at `/openapi.json`. The table names and the
/// bounds are filled in from the code (`APITables`, `APIQuery`); tests validate the document
/// (openapi-spec-validator) and check the real server against it (schemathesis).
package enum OpenAPIDocument {
    package static let path = "/openapi.json"

    package static let bytes: [UInt8] = Array(text.utf8)

    static var tableNames: String { APITables.all.map { "\"\($0.name)\"" }.joined(separator: ", ") }

    static let problemResponses = """
        "400": {"$ref": "#/components/responses/Problem"},
        "401": {"$ref": "#/components/responses/Unauthorized"},
        "404": {"$ref": "#/components/responses/Problem"},
        "405": {"$ref": "#/components/responses/Problem"},
        "413": {"$ref": "#/components/responses/Problem"},
        "429": {"$ref": "#/components/responses/TooMany"},
        "500": {"$ref": "#/components/responses/Problem"},
        "503": {"$ref": "#/components/responses/Problem"}
        """

    static let rangeParameters = """
        {"name": "from", "in": "query", "required": true, "description": "First day (UTC day received), inclusive.",
         "schema": {"type": "string", "format": "date"}},
        {"name": "to", "in": "query", "required": true,
         "description": "Last day, inclusive; at most \(APIQuery.maximumDays) days from `from`.",
         "schema": {"type": "string", "format": "date"}},
        {"name": "app", "in": "query", "description": "Only this app_id (one outside the token's scope answers as one without rows).",
         "schema": {"type": "string", "maxLength": 512}},
        {"name": "network", "in": "query", "description": "Only this ad_network_id.",
         "schema": {"type": "string", "maxLength": 512}}
        """

    static let text = """
        {
          "openapi": "3.1.0",
          "info": {
            "title": "postback numbers API",
            "version": "1",
            "description": "Read-only access to the published aggregates of postback, each token scoped to apps and ad networks (docs/api.md)."
          },
          "servers": [{"url": "/"}],
          "security": [{"token": []}],
          "paths": {
            "/livez": {
              "get": {
                "operationId": "livez", "summary": "Liveness", "security": [],
                "responses": {
                  "200": {"description": "Alive", "content": {"application/json": {"schema": {
                    "type": "object", "required": ["status"], "properties": {"status": {"const": "alive"}}}}}},
                  \(problemResponses)
                }
              }
            },
            "\(path)": {
              "get": {
                "operationId": "openapi", "summary": "This document", "security": [],
                "responses": {
                  "200": {"description": "The OpenAPI document", "content": {"application/json": {"schema": {"type": "object"}}}},
                  \(problemResponses)
                }
              }
            },
            "/v1/tables": {
              "get": {
                "operationId": "listTables", "summary": "The tables this token may read, with typed columns",
                "responses": {
                  "200": {"description": "Tables", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/TableList"}}}},
                  \(problemResponses)
                }
              }
            },
            "/v1/tables/{table}/rows": {
              "get": {
                "operationId": "tableRows",
                "summary": "A table's rows of a day range, within the token's scope, one page at a time",
                "parameters": [
                  {"name": "table", "in": "path", "required": true, "schema": {"type": "string", "enum": [\(tableNames)]}},
                  \(rangeParameters),
                  {"name": "campaign", "in": "query", "description": "Only this campaign_id.", "schema": {"type": "string", "maxLength": 512}},
                  {"name": "country", "in": "query", "description": "Only this country_code.", "schema": {"type": "string", "maxLength": 512}},
                  {"name": "columns", "in": "query", "description": "Comma-separated column names (default: dt and every column).",
                   "schema": {"type": "string", "maxLength": 512}},
                  {"name": "format", "in": "query", "schema": {"type": "string", "enum": ["json", "csv", "parquet"], "default": "json"}},
                  {"name": "limit", "in": "query", "description": "Rows per page.",
                   "schema": {"type": "integer", "minimum": 1, "maximum": \(APIQuery.maximumLimit), "default": \(APIQuery.defaultLimit)}},
                  {"name": "cursor", "in": "query", "description": "The `next_cursor` of the previous page.",
                   "schema": {"type": "string", "maxLength": 512}}
                ],
                "responses": {
                  "200": {
                    "description": "A page of rows",
                    "headers": {"Next-Cursor": {"description": "The cursor of the next page, when there is one.", "schema": {"type": "string"}}},
                    "content": {
                      "application/json": {"schema": {"$ref": "#/components/schemas/RowsPage"}},
                      "text/csv": {"schema": {"type": "string"}},
                      "application/vnd.apache.parquet": {"schema": {"type": "string", "contentMediaType": "application/vnd.apache.parquet"}}
                    }
                  },
                  \(problemResponses)
                }
              }
            },
            "/v1/summary": {
              "get": {
                "operationId": "summary",
                "summary": "The report's first-screen figures over the token's scope, optionally with the previous period",
                "parameters": [
                  \(rangeParameters),
                  {"name": "compare", "in": "query", "description": "previous: also the period of the same length just before.",
                   "schema": {"type": "string", "enum": ["previous"]}},
                  {"name": "environment", "in": "query", "description": "Whose postbacks: production (Apple's production keys) or development (test keys, integrations); never added together.",
                   "schema": {"type": "string", "enum": ["production", "development"], "default": "production"}}
                ],
                "responses": {
                  "200": {"description": "Figures", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Summary"}}}},
                  \(problemResponses)
                }
              }
            }
          },
          "components": {
            "securitySchemes": {"token": {"type": "http", "scheme": "bearer", "description": "A token from 'postback api token create'."}},
            "responses": {
              "Problem": {"description": "RFC 9457 problem", "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}},
              "Unauthorized": {
                "description": "No valid token",
                "headers": {"WWW-Authenticate": {"schema": {"type": "string"}}},
                "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
              },
              "TooMany": {
                "description": "Over the token's rate limit",
                "headers": {"Retry-After": {"schema": {"type": "integer"}}},
                "content": {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
              }
            },
            "schemas": {
              "Problem": {
                "type": "object", "required": ["type", "title", "status", "detail"],
                "properties": {"type": {"type": "string"}, "title": {"type": "string"}, "status": {"type": "integer"}, "detail": {"type": "string"}}
              },
              "Column": {"type": "object", "required": ["name", "type"], "properties": {"name": {"type": "string"}, "type": {"type": "string"}}},
              "Days": {"type": "array", "items": {"type": "string", "format": "date"}},
              "TableList": {
                "type": "object", "required": ["scope", "maximum_days", "maximum_limit", "tables"],
                "properties": {
                  "scope": {"type": "object", "required": ["apps", "networks"], "properties": {"apps": {"type": "string"}, "networks": {"type": "string"}}},
                  "maximum_days": {"type": "integer"},
                  "maximum_limit": {"type": "integer"},
                  "tables": {"type": "array", "items": {
                    "type": "object", "required": ["name", "columns"],
                    "properties": {"name": {"type": "string"}, "columns": {"type": "array", "items": {"$ref": "#/components/schemas/Column"}}}}}
                }
              },
              "RowsPage": {
                "type": "object", "required": ["table", "from", "to", "columns", "rows", "row_count", "next_cursor", "days_missing", "days_left_out"],
                "properties": {
                  "table": {"type": "string"},
                  "from": {"type": "string", "format": "date"},
                  "to": {"type": "string", "format": "date"},
                  "columns": {"type": "array", "items": {"$ref": "#/components/schemas/Column"}},
                  "rows": {"type": "array", "items": {"type": "object", "additionalProperties": {"type": ["string", "number", "integer", "boolean", "null"]}}},
                  "row_count": {"type": "integer", "minimum": 0},
                  "next_cursor": {"type": ["string", "null"]},
                  "days_missing": {"$ref": "#/components/schemas/Days"},
                  "days_left_out": {"$ref": "#/components/schemas/Days"}
                }
              },
              "Counts": {
                "type": "object", "required": ["postbacks", "installs", "redownloads", "reengagements", "losses", "null_values"],
                "properties": {
                  "postbacks": {"type": "integer"}, "installs": {"type": "integer"}, "redownloads": {"type": "integer"},
                  "reengagements": {"type": "integer"}, "losses": {"type": "integer"}, "null_values": {"type": "integer"}
                }
              },
              "Figures": {
                "type": "object",
                "required": ["environment", "from", "to", "days_included", "days_missing", "days_left_out", "days_partial", "totals",
                             "development_postbacks", "rejected_postbacks", "revenue", "networks", "top_campaigns", "cost", "return"],
                "properties": {
                  "environment": {"type": "string", "enum": ["production", "development"]},
                  "from": {"type": "string", "format": "date"},
                  "to": {"type": "string", "format": "date"},
                  "days_included": {"$ref": "#/components/schemas/Days"},
                  "days_missing": {"$ref": "#/components/schemas/Days"},
                  "days_left_out": {"$ref": "#/components/schemas/Days"},
                  "days_partial": {"$ref": "#/components/schemas/Days"},
                  "totals": {"$ref": "#/components/schemas/Counts"},
                  "development_postbacks": {"type": "integer"},
                  "rejected_postbacks": {"type": "integer"},
                  "revenue": {"type": "array", "items": {
                    "type": "object", "required": ["currency", "estimate", "minimum", "maximum", "valued_postbacks", "unknown_postbacks", "per_install"],
                    "properties": {
                      "currency": {"type": "string"}, "estimate": {"type": "number"}, "minimum": {"type": "number"},
                      "maximum": {"type": ["number", "null"]}, "valued_postbacks": {"type": "integer"},
                      "unknown_postbacks": {"type": "integer"}, "per_install": {"type": "string"}}}},
                  "networks": {"type": "array", "items": {
                    "type": "object", "required": ["ad_network_id", "counts"],
                    "properties": {"ad_network_id": {"type": "string"}, "counts": {"$ref": "#/components/schemas/Counts"}}}},
                  "top_campaigns": {"type": "array", "items": {
                    "type": "object", "required": ["campaign", "app_id", "ad_network_id", "campaigns_summed", "counts"],
                    "properties": {
                      "campaign": {"type": "string"}, "app_id": {"type": ["string", "null"]}, "ad_network_id": {"type": ["string", "null"]},
                      "campaigns_summed": {"type": ["integer", "null"]}, "counts": {"$ref": "#/components/schemas/Counts"}}}},
                  "cost": {"type": "array", "items": {
                    "type": "object", "required": ["currency", "spend", "installs_with_spend", "cost_per_install"],
                    "properties": {
                      "currency": {"type": "string"}, "spend": {"type": "number"}, "installs_with_spend": {"type": "integer"},
                      "cost_per_install": {"type": "string"}}}},
                  "return": {"type": "array", "items": {
                    "type": "object", "required": ["currency", "window", "revenue", "spend", "roas", "final", "cohorts"],
                    "properties": {
                      "currency": {"type": "string"}, "window": {"type": "integer", "minimum": 1, "maximum": 3},
                      "revenue": {"type": "number"}, "spend": {"type": "number"}, "roas": {"type": "string"},
                      "final": {"type": "boolean"}, "cohorts": {"type": "integer"}}}}
                }
              },
              "Summary": {
                "type": "object", "required": ["current"],
                "properties": {
                  "current": {"$ref": "#/components/schemas/Figures"},
                  "previous": {"oneOf": [{"$ref": "#/components/schemas/Figures"}, {"type": "null"}]}
                }
              }
            }
          }
        }

        """
}

/// Where `postback schema init` puts the starter conversion schema of an app the day had no schema
/// for (`schemas/APP/EFFECTIVE_FROM.json`): the report tells the reader the command.
package enum StarterSchemaFile {
    /// The first day the starter schema decodes: before any SKAdNetwork postback, so every
    /// postback already received is decoded with it.
    package static let effectiveFrom = "2018-01-01"
}

/// A rejection reason split into its template and the value that varies: `ad-network-id "x.skadnetwork"
/// is not one this receiver accepts` becomes the template `ad-network-id "…" is not one this receiver
/// accepts` and the value `x.skadnetwork`. Reasons that quote what the sender claimed would otherwise
/// give one entry per claimed value, and the report's top reasons would all be one reason.
///
/// Values are what stands between double quotes, or between single quotes that open after a space
/// or a bracket (so the apostrophe of "Apple's" opens nothing).
struct ReasonTemplate: Hashable {
    let template: String
    /// The quoted values, joined with ", " when there are several; empty when nothing is quoted.
    let value: String

    init(_ reason: String) {
        var template = ""
        var values: [String] = []
        var open: (quote: Character, value: String)? = nil
        var previous: Character = " "
        for character in reason {
            if var current = open {
                if character == current.quote && previous != "\\" {
                    values.append(current.value)
                    template += "…" + String(character)
                    open = nil
                } else {
                    current.value.append(character)
                    open = current
                }
            } else {
                template.append(character)
                if character == "\"" || (character == "'" && " ([{".contains(previous)) { open = (character, "") }
            }
            previous = character
        }
        // An unterminated quote is part of the text, not a value.
        if let current = open { template += current.value }
        self.template = template
        self.value = values.joined(separator: ", ")
    }
}

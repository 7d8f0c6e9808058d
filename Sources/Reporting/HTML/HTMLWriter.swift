/// Builds the page's markup. Tag and attribute names are `StaticString`s, so only literals written
/// in this module can become markup; every value (text and attribute values) goes through
/// `HTMLText.escape`. The one way to add unescaped text is `raw(_:)`, which also takes only literals
/// (the stylesheet, the doctype).
struct HTMLWriter {
    private(set) var output = ""

    init(reservingCapacity capacity: Int = 1 << 16) { output.reserveCapacity(capacity) }

    typealias Attributes = KeyValuePairs<StaticString, String>

    /// Trusted markup written in this module.
    mutating func raw(_ markup: StaticString) { output += markup.description }

    /// Text content, escaped.
    mutating func text(_ text: String) { output += HTMLText.escape(text) }

    mutating func open(_ tag: StaticString, _ attributes: Attributes = [:]) {
        output += "<"
        output += tag.description
        appendAttributes(attributes)
        output += ">"
    }

    mutating func close(_ tag: StaticString) {
        output += "</"
        output += tag.description
        output += ">"
    }

    /// An element with only text inside.
    mutating func element(_ tag: StaticString, _ attributes: Attributes = [:], text: String) {
        open(tag, attributes)
        self.text(text)
        close(tag)
    }

    /// An element whose content `body` writes.
    mutating func element(_ tag: StaticString, _ attributes: Attributes = [:], _ body: (inout HTMLWriter) -> Void) {
        open(tag, attributes)
        body(&self)
        close(tag)
    }

    /// An SVG element without content: `<rect … />`.
    mutating func empty(_ tag: StaticString, _ attributes: Attributes) {
        output += "<"
        output += tag.description
        appendAttributes(attributes)
        output += "/>"
    }

    /// An SVG shape with a tooltip: `<rect …><title>text</title></rect>`.
    mutating func shape(_ tag: StaticString, _ attributes: Attributes, tooltip: String) {
        open(tag, attributes)
        element("title", text: tooltip)
        close(tag)
    }

    mutating func newline() { output += "\n" }

    private mutating func appendAttributes(_ attributes: Attributes) {
        for (name, value) in attributes {
            output += " "
            output += name.description
            output += "=\""
            output += HTMLText.escape(value)
            output += "\""
        }
    }
}

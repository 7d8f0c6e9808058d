/// A mistake in the config file, named by its key: a closed `code`, the key when one is to blame, and
/// the message that says what the key must be.
package struct ConfigurationError: Error, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        /// A value of the wrong JSON type (a string where a number belongs, …).
        case wrongType
        /// A number outside the key's range.
        case outOfRange
        /// A value the section refuses for its own reasons (a key that needs another, a file that does
        /// not load, a key no section reads, a file that is not JSON).
        case invalid
    }

    package let code: Code
    /// The key at fault, when one is.
    package let key: String?
    package let description: String

    package init(_ description: String, code: Code = .invalid, key: String? = nil) {
        self.code = code
        self.key = key
        self.description = description
    }
}

/// One part of the one config file that a service owns: the keys it reads, declared once, and what
/// they mean. The receiver's configuration reads its own keys and hands every other key to the
/// section that declares it; a key no section declares is refused with "did you mean".
package protocol ConfigurationSection: Sendable {
    /// The keys this section reads, in the order "known keys" lists them.
    static var keys: [String] { get }
    init()
    /// Reads one of `keys` (`member.key` says which).
    mutating func read(_ member: ConfigurationMember) throws(ConfigurationError)
    /// Checks what parsing alone cannot (also after flags were applied), with the other sections at hand.
    func validate(in sections: ConfigurationSections) throws(ConfigurationError)
    /// How soon an open segment must be sealed for this section's service to take it; nil: no need.
    var sealingAgeSeconds: Double? { get }
}

extension ConfigurationSection {
    package func validate(in sections: ConfigurationSections) throws(ConfigurationError) {}
    package var sealingAgeSeconds: Double? { nil }
}

/// The sections of one config file, each read by its own type (`sections[ShippingConfiguration.self]`);
/// a section the file does not mention reads as its defaults.
package struct ConfigurationSections: Sendable {
    /// The section types, in the order the file's keys are listed and checked.
    package let types: [any ConfigurationSection.Type]
    private var values: [ObjectIdentifier: any ConfigurationSection] = [:]

    package init(_ types: [any ConfigurationSection.Type] = []) { self.types = types }

    package subscript<Section: ConfigurationSection>(_ type: Section.Type) -> Section {
        get { values[ObjectIdentifier(type)] as? Section ?? Section() }
        set { values[ObjectIdentifier(type)] = newValue }
    }

    /// Every key the sections read.
    package var keys: [String] { types.flatMap { $0.keys } }

    /// Reads `member` into the section that declares its key; false when none does.
    package mutating func read(_ member: ConfigurationMember) throws(ConfigurationError) -> Bool {
        guard let type = types.first(where: { $0.keys.contains(member.key) }) else { return false }
        try read(member, into: type)
        return true
    }

    private mutating func read<Section: ConfigurationSection>(
        _ member: ConfigurationMember, into type: Section.Type
    ) throws(ConfigurationError) {
        var section = self[type]
        try section.read(member)
        self[type] = section
    }

    package func validate() throws(ConfigurationError) {
        for type in types { try validate(type) }
    }

    private func validate<Section: ConfigurationSection>(_ type: Section.Type) throws(ConfigurationError) {
        try self[type].validate(in: self)
    }

    /// The soonest sealing age any section needs; nil when none needs one.
    package var sealingAgeSeconds: Double? {
        types.compactMap { sealingAge(of: $0) }.min()
    }

    private func sealingAge<Section: ConfigurationSection>(of type: Section.Type) -> Double? {
        self[type].sealingAgeSeconds
    }
}

/// Typed access to one config member, with errors that name the key. Relative paths are taken
/// relative to the config file's directory, so a config means the same wherever the receiver starts.
package struct ConfigurationMember {
    package let key: String
    package let value: JSONValue
    /// The config file's directory.
    package let directory: String

    package init(key: String, value: JSONValue, directory: String) {
        (self.key, self.value, self.directory) = (key, value, directory)
    }

    /// A number refused by its range is out of range; anything else given for a number is the wrong type.
    private var rangeCode: ConfigurationError.Code {
        if case .number = value { return .outOfRange }
        return .wrongType
    }

    package func fail(_ expected: String) -> ConfigurationError {
        ConfigurationError("\(key) must be \(expected), got \(value.kindDescription)", code: .wrongType, key: key)
    }

    /// A path from the config file: absolute as written, else relative to the file's directory.
    package func relative(_ path: String) -> String {
        path.hasPrefix("/") || directory == "." ? path : "\(directory)/\(path)"
    }

    package func string() throws(ConfigurationError) -> String {
        guard case .string(let text) = value else { throw fail("a string") }
        return text
    }

    package func optionalString() throws(ConfigurationError) -> String? {
        if case .null = value { return nil }
        return try string()
    }

    package func optionalStrings() throws(ConfigurationError) -> [String]? {
        if case .null = value { return nil }
        guard case .array(let items) = value else { throw fail("an array of strings") }
        var strings: [String] = []
        for item in items {
            guard case .string(let text) = item else { throw fail("an array of strings") }
            strings.append(text)
        }
        return strings
    }

    package func bool() throws(ConfigurationError) -> Bool {
        guard case .bool(let flag) = value else { throw fail("true or false") }
        return flag
    }

    package func integer(in range: ClosedRange<Int>) throws(ConfigurationError) -> Int {
        guard case .number(let number) = value, let integer = number.int64Value, range.contains(Int(integer)) else {
            throw ConfigurationError(
                "\(key) must be a whole number from \(range.lowerBound) to \(range.upperBound)", code: rangeCode, key: key)
        }
        return Int(integer)
    }

    package func milliseconds() throws(ConfigurationError) -> Double {
        guard case .number(let number) = value, let milliseconds = Double(number.text), milliseconds >= 0, milliseconds <= 100
        else {
            throw ConfigurationError("\(key) must be a number of milliseconds from 0 to 100", code: rangeCode, key: key)
        }
        return milliseconds / 1000
    }

    package func seconds(allowingZero: Bool = false) throws(ConfigurationError) -> Double {
        guard case .number(let number) = value, let seconds = Double(number.text), allowingZero ? seconds >= 0 : seconds > 0,
            seconds <= 86_400
        else {
            throw ConfigurationError(
                "\(key) must be a number of seconds \(allowingZero ? "from 0" : "above 0") and at most 86400",
                code: rangeCode, key: key)
        }
        return seconds
    }

    package func hours() throws(ConfigurationError) -> Double {
        guard case .number(let number) = value, let hours = Double(number.text), hours >= 0, hours <= 24 * 366 else {
            throw ConfigurationError("\(key) must be a number of hours from 0 to 8784", code: rangeCode, key: key)
        }
        return hours
    }
}

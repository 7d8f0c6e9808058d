package import Basics

/// Why the store could not be opened, a segment not set aside, or a reverification not finished: a
/// closed `code` to branch on, the path it is about, and the message that names what to do. A failed
/// system call on its own is thrown as the `SystemCallError` it is.
package struct StoreError: Error, Sendable, CustomStringConvertible {
    package enum Code: Sendable, Hashable {
        /// The writer id is not 1–64 letters, digits, '.', '_' or '-' (`writerID`).
        case invalidWriterID
        /// Another process holds the writer id's lock (`path`: the lock file, `writerID`).
        case writerIDInUse
        /// The spool directories cannot be made (`path`: the data directory, `cause`).
        case dataDirectoryNotUsable
        /// The spool cannot be listed for recovery (`cause`).
        case notRecoverable
        /// Segments that cannot be read (`problems`): their postbacks' dedup keys are unknown, so a replay
        /// of any of them would be stored a second time.
        case unreadableSegments
        /// `set-aside`: the path is not a sealed segment's name in this store.
        case notASegment
        /// `set-aside`: no file at the path.
        case noSuchSegment
        /// `set-aside`: the segment has no seal, so nothing shows it is damaged.
        case unsealed
        /// `set-aside`: the segment matches its seal; it is not damaged.
        case matchesItsSeal
        /// `set-aside`: the destination exists already (`path`).
        case destinationExists
        /// `reverify`: the day's new segment could not be written; nothing was moved (`path`, `day`, `cause`).
        case notMoved
        /// `reverify`: a source segment could not be rewritten without its moved records (`path`, `cause`).
        case notRewritten
    }

    package let code: Code
    /// The file or directory the error is about.
    package let path: String
    package let writerID: String?
    package let day: UTCDay?
    /// `unreadableSegments`: each segment's problem.
    package let problems: [String]
    /// The failure under this one, when there is one (a `SystemCallError` most often).
    package let cause: String?
    /// The failed system call's `errno`, when the cause is one.
    package let errorNumber: Int32?
    package let description: String

    private init(
        _ code: Code, path: String, writerID: String? = nil, day: UTCDay? = nil, problems: [String] = [],
        cause: (any Error)? = nil, _ description: String
    ) {
        self.code = code
        self.path = path
        self.writerID = writerID
        self.day = day
        self.problems = problems
        self.cause = cause.map { "\($0)" }
        self.errorNumber = (cause as? SystemCallError)?.errorNumber
        self.description = description
    }

    static func invalidWriterID(_ writerID: String) -> StoreError {
        StoreError(
            .invalidWriterID, path: "", writerID: writerID,
            "writer id '\(writerID)' must be 1–64 letters, digits, '.', '_' or '-'")
    }

    static func writerIDInUse(_ writerID: String, root: String, lockFile: String) -> StoreError {
        StoreError(
            .writerIDInUse, path: lockFile, writerID: writerID,
            "another receiver with writer id '\(writerID)' is using \(root) (\(lockFile) is locked); "
                + "give each receiver sharing a store its own --writer-id (writer_id in the config)")
    }

    static func dataDirectoryNotUsable(_ dataDirectory: String, _ cause: SystemCallError) -> StoreError {
        StoreError(
            .dataDirectoryNotUsable, path: dataDirectory, cause: cause,
            "data directory \(dataDirectory) is not usable: \(cause)")
    }

    static func notRecoverable(_ cause: SystemCallError) -> StoreError {
        StoreError(.notRecoverable, path: cause.path, cause: cause, "cannot recover the store: \(cause)")
    }

    static func unreadableSegments(_ problems: [String]) -> StoreError {
        StoreError(
            .unreadableSegments, path: "", problems: problems,
            "cannot recover the store: unreadable spool segment(s), so their postbacks could be stored twice: "
                + problems.joined(separator: "; "))
    }

    /// A `set-aside` refusal (`notASegment` … `destinationExists`), its message naming the path.
    static func setAsideRefused(_ code: Code, path: String, _ message: String) -> StoreError {
        StoreError(code, path: path, message)
    }

    static func notMoved(to destination: String, day: UTCDay, _ cause: any Error) -> StoreError {
        StoreError(
            .notMoved, path: destination, day: day, cause: cause,
            "cannot write \(destination): \(cause); nothing was moved for \(day)")
    }

    static func notRewritten(_ path: String, _ cause: any Error) -> StoreError {
        StoreError(
            .notRewritten, path: path, cause: cause,
            "cannot rewrite \(path): \(cause); its moved records are stored, a rerun finishes the move")
    }
}

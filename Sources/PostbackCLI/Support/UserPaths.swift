import Basics

#if canImport(Glibc)
    import Glibc
#endif

/// Checks of paths the user typed, made before any work starts, so the error names the option and
/// the path as typed, and says what to do (rather than a temporary name or a bare errno from deep
/// inside a reader).
enum UserPaths {
    enum Kind { case missing, file, directory, other }

    static func kind(of path: String) -> Kind {
        var status = stat()
        guard stat(path, &status) == 0 else { return .missing }
        switch status.st_mode & S_IFMT {
        case S_IFDIR: return .directory
        case S_IFREG: return .file
        default: return .other
        }
    }

    /// `path` (given with `option`) must be an existing directory.
    static func requireDirectory(_ path: String, option: String, holding contents: String) throws {
        switch kind(of: path) {
        case .directory: return
        case .missing: throw CommandError.usage("\(option) \(path): no such directory (it should hold \(contents))")
        case .file, .other: throw CommandError.usage("\(option) \(path) is a file; give the directory that holds \(contents)")
        }
    }

    /// `path` (given with `option`, or as an argument) must be a file that can be read; `-` is stdin.
    static func requireInputFile(_ path: String, option: String? = nil) throws {
        guard path != "-" else { return }
        let named = option.map { "\($0) \(path)" } ?? path
        switch kind(of: path) {
        case .file, .other: return
        case .missing: throw CommandError.usage("\(named): no such file")
        case .directory: throw CommandError.usage("\(named) \(RecordReader.directoryHint(path))")
        }
    }

    /// A file the command will write (atomically, next to its final name): its directory must exist.
    /// `-` means standard output and is always fine.
    static func requireOutputFile(_ path: String, option: String) throws {
        guard path != "-" else { return }
        if kind(of: path) == .directory {
            throw CommandError.usage("\(option) \(path) is a directory; give a file name, or '-' for standard output")
        }
        guard let slash = path.lastIndex(of: "/") else { return }
        let directory = slash == path.startIndex ? "/" : String(path[..<slash])
        switch kind(of: directory) {
        case .directory: return
        case .missing:
            throw CommandError.usage(
                "\(option) \(path): directory \(directory) does not exist; create it first (mkdir -p \(directory)) or give '-' for standard output"
            )
        case .file, .other: throw CommandError.usage("\(option) \(path): \(directory) is not a directory")
        }
    }
}

import Basics
import Testing

/// `LineSplitter` holds the line rules every reader of spool segments and record files shares; it
/// must give the same lines whatever the chunk bounds.
@Suite struct LineSplitterTests {
    struct Expected: Equatable, CustomStringConvertible {
        let bytes: [UInt8]?
        let number: Int
        let offset: Int
        let length: Int
        let terminated: Bool

        var description: String { "#\(number)@\(offset) length \(length) \(terminated ? "" : "unterminated ")\(bytes ?? [])" }
    }

    /// The rules, read off the whole input at once.
    static func reference(_ input: [UInt8], maximumLineBytes: Int) -> [Expected] {
        var lines: [Expected] = []
        var start = 0
        while start < input.count {
            let newline = input[start...].firstIndex(of: 0x0A)
            let end = newline ?? input.count
            var bytes = Array(input[start..<end])
            let length = bytes.count
            if bytes.last == 0x0D { bytes.removeLast() }
            lines.append(
                Expected(
                    bytes: length <= maximumLineBytes ? bytes : nil, number: lines.count + 1, offset: start, length: length,
                    terminated: newline != nil))
            start = end + 1
        }
        return lines
    }

    static func split(_ input: [UInt8], maximumLineBytes: Int, chunkBytes: Int, reads: inout SystemRandomNumberGenerator)
        -> (lines: [Expected], consumed: Int, count: Int)
    {
        var splitter = LineSplitter(maximumLineBytes: maximumLineBytes, chunkBytes: chunkBytes)
        var lines: [Expected] = []
        var position = 0
        func record(_ line: LineSplitter.Line, terminated: Bool) {
            lines.append(
                Expected(
                    bytes: line.bytes.map { Array($0) }, number: line.number, offset: line.offset, length: line.length,
                    terminated: terminated))
        }
        while true {
            let chunk = splitter.fill { room in
                // Short reads of any size, as pipes and object-store streams give them.
                let count = min(room.count, input.count - position, Int.random(in: 1...chunkBytes, using: &reads))
                input.withUnsafeBytes {
                    room.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[position..<(position + count)]))
                }
                position += count
                return count
            }
            if chunk.isEmpty {
                if let last = splitter.finish() { record(last, terminated: false) }
                #expect(splitter.finish()?.number == nil, "a second finish gives nothing")
                break
            }
            while let line = splitter.next() { record(line, terminated: true) }
        }
        return (lines, splitter.bytesConsumed, splitter.lineCount)
    }

    @Test(arguments: [(16, 7), (16, 1), (5, 3), (64, 64)])
    func linesAreTheSameWhateverTheChunkBounds(maximumLineBytes: Int, chunkBytes: Int) {
        var random = SystemRandomNumberGenerator()
        let pieces: [[UInt8]] = [
            Array("a".utf8), Array("abc\r".utf8), [], [0x0D], Array("exactly-sixteen!".utf8), Array("seventeen-bytes!!".utf8),
            Array(repeating: 0x78, count: 40), Array("x\r\r".utf8),
        ]
        for _ in 0..<300 {
            var input: [UInt8] = []
            for _ in 0..<Int.random(in: 0...8, using: &random) {
                input += pieces.randomElement(using: &random)! + [0x0A]
            }
            if Bool.random(using: &random) { input += pieces.randomElement(using: &random)! }  // a torn tail, or none
            let expected = Self.reference(input, maximumLineBytes: maximumLineBytes)
            let split = Self.split(input, maximumLineBytes: maximumLineBytes, chunkBytes: chunkBytes, reads: &random)
            #expect(split.lines == expected, "input \(input)")
            #expect(split.consumed == input.count && split.count == expected.count)
        }
    }
}

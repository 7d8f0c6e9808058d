// The differential test of the P-256 precomputed-table path against EVP, at scale: every case is
// judged by the table, by a batch and by EVP, and any disagreement is printed in full (key,
// signature, digest) and fails the run. scripts/ecdsa-differential builds and runs it.
//
//   ecdsa-differential [--signatures N] [--workers W]
import Dispatch
import Foundation
import Locking
import PostbackCrypto

var signatures = 10_000_000
var workers = ProcessInfo.processInfo.activeProcessorCount
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--signatures": signatures = arguments.popFirst().flatMap { Int($0) } ?? -1
    case "--workers": workers = arguments.popFirst().flatMap { Int($0) } ?? -1
    default: signatures = -1
    }
    if signatures < 1 || workers < 1 {
        FileHandle.standardError.write(Data("usage: ecdsa-differential [--signatures N] [--workers W]\n".utf8))
        exit(2)
    }
}
guard ECDSAVerificationPath.configured == .precomputedTable else {
    FileHandle.standardError.write(Data("ecdsa-differential: POSTBACK_ECDSA_PATH=evp is set; there is nothing to compare\n".utf8))
    exit(2)
}

let start = Date()
let keys = try ECDSADifferential.Keys(randomKeys: 8, wrappingKeys: 16, smallCoordinateKeys: 6)
let missingTables = keys.all.filter { !$0.usesPrecomputedTable }.count
guard missingTables == 0 else {
    FileHandle.standardError.write(Data("ecdsa-differential: \(missingTables) keys got no precomputed table\n".utf8))
    exit(1)
}
let reports = Locked<[ECDSADifferential.Report]>([])
let shares = (0..<workers).map { signatures / workers + ($0 < signatures % workers ? 1 : 0) }
DispatchQueue.concurrentPerform(iterations: workers) { worker in
    let share = shares[worker]
    let report = ECDSADifferential(keys: keys).run(count: share)
    reports.withLock { $0.append(report) }
}
let all = reports.withLock { $0 }
let checked = all.map(\.checked).reduce(0, +)
let valid = all.map(\.valid).reduce(0, +)
var kinds: [String: Int] = [:]
for report in all { kinds.merge(report.kinds, uniquingKeysWith: +) }
let disagreements = all.flatMap(\.disagreements)
let seconds = Date().timeIntervalSince(start)

print(
    "checked \(checked) signatures (\(valid) valid) on \(workers) workers in \(String(format: "%.1f", seconds)) s: table, batch and EVP"
)
print("kinds: " + kinds.keys.sorted().map { "\($0) \(kinds[$0]!)" }.joined(separator: ", "))
for disagreement in disagreements.prefix(20) { print("DISAGREEMENT \(disagreement)") }
print("\(disagreements.count) disagreements")
exit(disagreements.isEmpty && checked >= signatures ? 0 : 1)

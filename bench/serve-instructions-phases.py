"""Instructions per accepted postback by phase, from bench/serve-instructions' demangled
`callgrind_annotate --inclusive=yes` output: python3 bench/serve-instructions-phases.py ANNOTATE COUNT.

Phases are inclusive counts of the functions that begin them (a phase's number includes the phases
nested in it, shown indented). The one-time cost (start-up, each key's precomputed table) is
taken out of the per-postback figures."""

import re
import sys

annotate, count = sys.argv[1], int(sys.argv[2])
inclusive = {}
for line in open(annotate, encoding="utf-8", errors="replace"):
    match = re.match(r"\s*([\d,]+) \([ \d.]+%\)\s+(.*)$", line)
    if not match:
        continue
    cost = int(match.group(1).replace(",", ""))
    name = match.group(2)
    inclusive[name] = max(inclusive.get(name, 0), cost)


def cost(pattern):
    """The largest inclusive cost of a function whose line matches `pattern` (0 if none)."""
    return max((value for name, value in inclusive.items() if re.search(pattern, name)), default=0)


total = cost(r"PROGRAM TOTALS")
table = cost(r"P256KeyTable\.init\(publicKey:\)")
startup = cost(r"\?\?\?:postback_main ")
library_thread = cost(r"libmicrohttpd\.so")
callbacks = sum(
    cost(pattern)
    for pattern in [
        r"@objc closure #1 in HTTPDaemon\.init",
        r"@objc closure #2 in HTTPDaemon\.init",
        r"@objc closure #3 in HTTPDaemon\.init",
        r"@objc closure #4 in HTTPDaemon\.init",
    ]
)
# `handle(_:on:line:chunk:)` since the request state machine returns steps; `handle(connection:…)` before.
handle = cost(r"RequestHandler\.handle\((connection:|_:on:)")
# Postbacks are checked on the verifying threads (VerificationQueue), in batches (builds before
# the one threading mode could check each on its connection's thread with thread_per_connection).
verifying_threads = cost(r"\?\?\?:closure #1 in VerificationQueue\.init")
# `ingest` (verify, policy, hand to the spool writer) since issue 26; `receive` in builds before it.
receive = cost(r"PostbackIngest\.(ingest|receive)\((body:|_:)")
# The first postback's check builds the key tables: taken out once.
verify = cost(r"PostbackVerifier\.verify\(body:\)") + cost(r"PostbackVerifier\.verify\(batch:\)") - table
signature = cost(r"ECDSAPublicKey\.isValidSignature\(derSignature:digest:\)") + cost(r"SharedInversion\.init\(") - table
inversion = cost(r"\?\?\?:BN_mod_inverse ")
parse = cost(r"specialized Postback\.init\(body:\)") or cost(r"Postback\.init\(body:\)")
digest = cost(r"static SHA256\.hash<A>\(_:\)")
record = cost(r"SpoolRecord\.encoded\(\)") + cost(r"SpoolRecord\.init\(receivedAt:writer:route:result:body:status:reason:\)")
metrics = sum(value for name, value in inclusive.items() if re.search(r"\?\?\?:ServerMetrics\.\w+\(", name))
log = cost(r"ServerLog\.log\(")
writer = cost(r"\?\?\?:Worker\.run\(\)")
fdatasync_calls = None

rows = [
    ("total (start-up and key tables taken out)", total - startup - table),
    ("libmicrohttpd itself (its threads minus our callbacks)", library_thread - callbacks),
    ("our callbacks (request line, headers, body, reply)", callbacks - (0 if verifying_threads else table)),
    ("  RequestHandler.handle", handle - (0 if verifying_threads else table)),
    ("verifying threads (VerificationQueue)", max(verifying_threads - table, 0)),
    ("  PostbackIngest.ingest (receive before)", receive - table),
    ("    verify (PostbackVerifier.verify(body:) and verify(batch:))", verify),
    ("      signature check (ECDSA, with a batch's shared inversion)", signature),
    ("        modular inversion of s (BN_mod_inverse)", inversion),
    ("      parse (Postback(body:))", parse),
    ("      SHA-256 of the signed message", digest),
    ("    spool record (SpoolRecord init + encoded)", record),
    ("metrics (ServerMetrics, all calls)", metrics),
    ("log (ServerLog.log)", log),
    ("group commit thread (Worker.run: write, fdatasync, completions)", writer),
]
print(f"instructions per accepted postback ({count} postbacks; one-time: start-up {startup / 1e6:.1f} M, key tables {table / 1e6:.1f} M)")
for label, value in rows:
    print(f"  {label:<66} {value / count:>10,.0f}")

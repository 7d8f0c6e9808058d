import PostbackCLI

#if canImport(Glibc)
    import Glibc
#endif

// A write to a closed pipe (`postback verify … | head`) should end quietly, not kill us with SIGPIPE.
signal(SIGPIPE, SIG_IGN)
exit(PostbackCommand.run(Array(CommandLine.arguments.dropFirst())).rawValue)

import Foundation
import PackagePlugin

/// Stamps the build with the git commit it was built from: before every build, `scripts/build-stamp`
/// writes `BuildStamp.swift` (the short commit, `-dirty` for a tree with changes, and the date),
/// rewriting it only when that changes, so an ordinary rebuild recompiles nothing.
@main struct BuildStampPlugin: BuildToolPlugin {
    func createBuildCommands(context: PluginContext, target: Target) throws -> [Command] {
        let output = context.pluginWorkDirectoryURL.appending(path: "stamp")
        return [
            .prebuildCommand(
                displayName: "Stamping the build with its git commit",
                executable: URL(fileURLWithPath: "/bin/sh"),
                arguments: [
                    context.package.directoryURL.appending(path: "scripts/build-stamp").path,
                    context.package.directoryURL.path, output.path,
                ],
                outputFilesDirectory: output)
        ]
    }
}

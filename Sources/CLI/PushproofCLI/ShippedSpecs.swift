import Foundation

/// Where the spec set that ships with pushproof is, so `check` (and `serve --specs shipped`)
/// work from any folder. Looked for in this order, the first holding a specset.json winning:
/// 1. `$PUSHPROOF_SPECS`;
/// 2. installed beside the executable: `<bin>/../share/pushproof/Specs` (`make install`);
/// 3. the package the binary was built from: its `Specs/`, recorded at build time (a build tree);
/// 4. `./Specs`.
/// `--specs DIR` skips the search.
struct ShippedSpecs {
    /// The word `--specs` takes for "the shipped set".
    static let keyword = "shipped"
    /// One line for `--help`.
    static let searchOrder = "$PUSHPROOF_SPECS, else <bin>/../share/pushproof/Specs, else the Specs/ of the package "
        + "pushproof was built from, else ./Specs"

    let path: String
    /// How it was found, for the line that names it: `--specs`, `$PUSHPROOF_SPECS`, ….
    let foundBy: String

    /// `explicit` is `--specs`' value: a directory as given, or nil / `shipped` to search.
    static func locate(explicit: String?, environment: [String: String] = ProcessInfo.processInfo.environment) -> ShippedSpecs {
        if let explicit, explicit != keyword { return ShippedSpecs(path: explicit, foundBy: "--specs") }
        // An environment variable names the set outright, found or not: its error should say so.
        if let env = environment["PUSHPROOF_SPECS"], !env.isEmpty { return ShippedSpecs(path: env, foundBy: "$PUSHPROOF_SPECS") }
        var candidates: [(String, String)] = []
        if let executable = executableDirectory() {
            candidates.append((executable.deletingLastPathComponent().appendingPathComponent("share/pushproof/Specs").path,
                               "installed beside \(executable.path)"))
        }
        candidates.append((buildTreeSpecs, "the package pushproof was built from"))
        for (path, how) in candidates where holdsSpecs(path) { return ShippedSpecs(path: path, foundBy: how) }
        return ShippedSpecs(path: "Specs", foundBy: "./Specs")
    }

    /// `Specs/` of the package this file was compiled in (Sources/CLI/PushproofCLI/ is three levels below).
    static let buildTreeSpecs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Specs").path

    private static func holdsSpecs(_ path: String) -> Bool {
        FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent("specset.json"))
    }

    /// The folder of the running executable, symlinks resolved (`/proc/self/exe` on Linux).
    private static func executableDirectory() -> URL? {
        guard let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
        return URL(fileURLWithPath: path).deletingLastPathComponent()
    }

    /// `specs: /abs/path (how)`, for check's header and serve's start-up line.
    var description: String {
        let absolute = URL(fileURLWithPath: path).standardizedFileURL.path
        return "specs: \(absolute) (\(foundBy))"
    }
}

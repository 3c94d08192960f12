import Foundation
import JSON
import MockGateway

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

/// The spec set `run`, `drive --scenario` and `plan --scenario` judge with: `--specs`, else the
/// shipped set found as `check` finds it, with `--spec-config`'s overrides (a team's bundle
/// ids). A scenario's own `app` is claimed for its product on top of these.
struct ScenarioSpecs {
    /// `--specs` and `--spec-config`, as the three commands take them (`prefix`: "With
    /// --scenario: " where only a scenario run reads them).
    static func options(prefix: String = "") -> [OptionSpec] {
        [
            .value("specs", "DIR", prefix + "The spec directory (specset.json's config gives each product's bundle ids and FCM "
                   + "project; a scenario's own \"app\" is claimed for its product too).", default: ShippedSpecs.searchOrder),
            .value("spec-config", "FILE", prefix + "JSON that replaces values of specset.json's config (bundle ids, FCM project), "
                   + "as for check and serve."),
        ]
    }

    let location: ShippedSpecs
    let configPath: String?

    init(_ arguments: ParsedArguments) {
        location = ShippedSpecs.locate(explicit: arguments.value("specs"))
        configPath = arguments.value("spec-config")
    }

    /// The judge; the error names the spec set and what to pass when none was found.
    func load() throws(SpecsUnavailable) -> SpecJudge {
        let overrides: JSONObject
        do {
            overrides = try configPath.map { try loadSpecConfig($0) } ?? [:]
        } catch {
            throw SpecsUnavailable(description: "--spec-config \(error)")
        }
        do {
            return try SpecJudge(directory: location.path, configOverrides: overrides)
        } catch {
            let hint = location.foundBy == "./Specs" ? " (no shipped specs found: give --specs DIR or set PUSHPROOF_SPECS)" : ""
            throw SpecsUnavailable(description: "\(location.description): \(error)\(hint)")
        }
    }
}

/// The spec set or its `--spec-config` could not be read.
struct SpecsUnavailable: Error, CustomStringConvertible {
    var description: String
}

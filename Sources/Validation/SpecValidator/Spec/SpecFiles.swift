// Reading spec directories: a cold path, so Foundation is fine here.
import Foundation
import JSON

extension SpecSet {
    /// Loads `<directory>/specset.json` and every `<directory>/<product>/*.json` of the products it
    /// lists, and compiles them. Throws the first problem, naming the file and the JSON pointer.
    /// `configOverrides` is merged over specset.json's `config` (for `serve --specs` with your
    /// own bundle ids).
    public static func load(directory: String, configOverrides: JSONObject = [:]) throws(SpecLoadError) -> SpecSet {
        let (specset, files) = try readDirectory(directory)
        let (set, issues) = compile(specset: specset, files: files, configOverrides: configOverrides, strictSchema: false)
        if let (file, issue) = issues.first { throw SpecLoadError(file: file, pointer: issue.pointer, message: issue.message) }
        guard let set else { throw SpecLoadError(file: "specset.json", pointer: .root, message: "cannot be compiled") }
        return set
    }

    /// The raw files of a spec directory, specset.json apart.
    static func readDirectory(_ directory: String) throws(SpecLoadError) -> (specset: [UInt8], files: [(path: String, bytes: [UInt8])]) {
        let root = URL(fileURLWithPath: directory)
        guard let specset = FileManager.default.contents(atPath: root.appendingPathComponent("specset.json").path) else {
            throw SpecLoadError(file: "specset.json", pointer: .root, message: "cannot read \(root.appendingPathComponent("specset.json").path)")
        }
        var products: [String] = []
        if let json = try? JSONParser.parse(Array(specset)), let listed = json["products"]?.objectValue {
            products = listed.keys
        }
        var files: [(path: String, bytes: [UInt8])] = []
        for product in products {
            let folder = root.appendingPathComponent(product)
            guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else {
                throw SpecLoadError(file: product + "/", pointer: .root, message: "product \(product) has no folder \(folder.path)")
            }
            for name in names.sorted() where name.hasSuffix(".json") {
                let path = folder.appendingPathComponent(name).path
                guard let data = FileManager.default.contents(atPath: path) else {
                    throw SpecLoadError(file: product + "/" + name, pointer: .root, message: "cannot read \(path)")
                }
                files.append((product + "/" + name, Array(data)))
            }
        }
        return (Array(specset), files)
    }
}

import JSON
import PushModel

// Turns one spec file's JSON into a PushSpec, collecting every problem with its pointer so the
// loader can stop at the first and the linter can report them all.

extension SpecSource {
    /// `{"seed": "000_….txt", "sentence": "…"}` or `{"reference": "apns.md", "sentence": "…"}`;
    /// a source with only `sentence` takes the spec file's `seed`.
    static func parse(_ json: JSONValue, defaultSeed: String?) throws(SpecIssue) -> SpecSource {
        guard let object = json.objectValue else { throw SpecIssue("a source is {\"seed\": file, \"sentence\": text}") }
        for key in object.keys where !["seed", "reference", "sentence"].contains(key) {
            throw SpecIssue("unknown key \"\(key)\" in a source", at: JSONPointer(tokens: [key]))
        }
        guard let sentence = object["sentence"]?.stringValue, !sentence.isEmpty else {
            throw SpecIssue("a source needs a non-empty \"sentence\"", at: JSONPointer(tokens: ["sentence"]))
        }
        let seed = object["seed"]?.stringValue
        let reference = object["reference"]?.stringValue
        if seed != nil && reference != nil { throw SpecIssue("a source names a seed or a reference, not both") }
        if seed == nil && reference == nil {
            guard let defaultSeed else { throw SpecIssue("a source needs \"seed\" (or a spec-level \"seed\")") }
            return SpecSource(seed: defaultSeed, sentence: sentence)
        }
        return SpecSource(seed: seed, reference: reference, sentence: sentence)
    }
}

/// Extension keywords the body schemas may carry besides JSON Schema 2020-12.
let schemaExtensionKeywords: Set<String> = ["x-source"]

enum SpecCompiler {
    static let topLevelKeys: Set<String> = ["id", "product", "transport", "seed", "description", "readings",
                                            "match", "headers", "body", "derived", "content", "examples"]

    /// Compiles a spec; problems go to `issues` (pointers into the file). Returns nil only when
    /// the file is too broken to judge anything (no id, no transport, no match).
    static func compile(_ json: JSONValue, file: String, config: JSONValue, strictSchema: Bool,
                        issues: inout [SpecIssue]) -> PushSpec? {
        guard let root = json.objectValue else {
            issues.append(SpecIssue("a spec file is a JSON object"))
            return nil
        }
        for key in root.keys where !topLevelKeys.contains(key) {
            issues.append(SpecIssue("unknown key \"\(key)\"; known: \(topLevelKeys.sorted().joined(separator: ", "))",
                                    at: JSONPointer(tokens: [key])))
        }
        guard let id = root["id"]?.stringValue, !id.isEmpty else {
            issues.append(SpecIssue("\"id\" (a string like \"poolse.ring.apns\") is required", at: JSONPointer(tokens: ["id"])))
            return nil
        }
        let product = root["product"]?.stringValue ?? ""
        if product.isEmpty { issues.append(SpecIssue("\"product\" is required", at: JSONPointer(tokens: ["product"]))) }
        guard let transport = root["transport"]?.stringValue.flatMap(PushTransport.init(rawValue:)) else {
            issues.append(SpecIssue("\"transport\" must be \"apns\" or \"fcm\"", at: JSONPointer(tokens: ["transport"])))
            return nil
        }
        let seed = root["seed"]?.stringValue
        if let readings = root["readings"], readings.arrayValue?.allSatisfy({ $0.stringValue != nil }) != true {
            issues.append(SpecIssue("\"readings\" is an array of strings", at: JSONPointer(tokens: ["readings"])))
        }


        // match
        guard let match = compileMatch(root["match"], transport: transport, config: config, issues: &issues) else { return nil }

        // headers
        var headerRules: [HeaderRule] = []
        if let headers = root["headers"] {
            if let list = headers.arrayValue {
                for (i, item) in list.enumerated() {
                    let at = JSONPointer(tokens: ["headers", String(i)])
                    if let rule = compileHeaderRule(item, at: at, config: config, seed: seed, issues: &issues) {
                        headerRules.append(rule)
                    }
                }
            } else {
                issues.append(SpecIssue("\"headers\" is an array of header rules", at: JSONPointer(tokens: ["headers"])))
            }
        }

        // derived
        var derivedRules: [DerivedRule] = []
        if let derived = root["derived"] {
            if let list = derived.arrayValue {
                for (i, item) in list.enumerated() {
                    let at = JSONPointer(tokens: ["derived", String(i)])
                    if let rule = compileDerivedRule(item, at: at, config: config, seed: seed, issues: &issues) {
                        derivedRules.append(rule)
                    }
                }
            } else {
                issues.append(SpecIssue("\"derived\" is an array of derived rules", at: JSONPointer(tokens: ["derived"])))
            }
        }
        var seenIDs: Set<String> = []
        for rule in headerRules.map(\.id) + derivedRules.map(\.id) where !seenIDs.insert(rule).inserted {
            issues.append(SpecIssue("two rules share the id \"\(rule)\"; give one an explicit \"id\""))
        }

        // body schema
        var schema: JSONSchema?
        var schemaSource: SpecSource?
        let schemaDocument = root["body"] ?? .bool(true)
        if root["body"] == nil {
            issues.append(SpecIssue("\"body\" (a JSON Schema for the payload) is required", at: JSONPointer(tokens: ["body"])))
        } else {
            if let object = schemaDocument.objectValue {
                schemaSource = source(object["x-source"], at: JSONPointer(tokens: ["body"]), key: "x-source", seed: seed, issues: &issues)
            } else {
                issues.append(SpecIssue("\"body\" must be a schema object carrying \"x-source\"", at: JSONPointer(tokens: ["body"])))
            }
            checkSchemaSources(schemaDocument, at: JSONPointer(tokens: ["body"]), seed: seed, issues: &issues)
            do {
                schema = try JSONSchema(schemaDocument, options: .init(strict: strictSchema, extensionKeywords: schemaExtensionKeywords))
            } catch {
                issues.append(SpecIssue("body schema: \(error.message)", at: JSONPointer(tokens: ["body"] + error.pointer.tokens)))
            }
        }

        // examples
        var examples: [SpecExample] = []
        if let list = root["examples"] {
            if let items = list.arrayValue {
                for (i, item) in items.enumerated() {
                    if let example = compileExample(item, index: i, transport: transport, product: product, config: config,
                                                    issues: &issues) { examples.append(example) }
                }
            } else {
                issues.append(SpecIssue("\"examples\" is an array of {headers, body}", at: JSONPointer(tokens: ["examples"])))
            }
        }

        let spec = PushSpec(id: id, product: product, transport: transport, file: file, examples: examples, match: match,
                            headerRules: headerRules, derivedRules: derivedRules, schema: schema,
                            schemaDocument: schemaDocument, schemaSource: schemaSource,
                            freeContent: compileFreeContent(root["content"], seed: seed, issues: &issues))
        // The linter asks every file to say what the sender chooses, even "nothing" (`[]`): a
        // field the rules do not decide is then a choice someone wrote down, not an oversight.
        if strictSchema, root["content"] == nil {
            issues.append(SpecIssue("\"content\" is required: {\"free\": [...]} lists the fields the sender chooses (or [] for none)",
                                    at: JSONPointer(tokens: ["content"])))
        }
        for (i, free) in spec.freeContent.enumerated() where free.pointer.tokens.first == "body" && !spec.schemaDeclares(free.pointer) {
            issues.append(SpecIssue("\(free.pointer) is not a field the body schema declares: a free field must be one the push has",
                                    at: JSONPointer(tokens: ["content", "free", String(i), "pointer"])))
        }
        return spec
    }

    /// The `source` (or, on a schema, `x-source`) of the rule at `pointer`.
    static func source(_ json: JSONValue?, at pointer: JSONPointer, key: String = "source", seed: String?,
                       issues: inout [SpecIssue]) -> SpecSource? {
        guard let json else {
            issues.append(SpecIssue("missing \"\(key)\"", at: pointer))
            return nil
        }
        do { return try SpecSource.parse(json, defaultSeed: seed) } catch {
            issues.append(error.prefixed(pointer.appending(key)))
            return nil
        }
    }

    /// `content`: `{"free": [{"pointer": "/body/sent_at", "why": "…", "source": {…}?}]}`, the
    /// fields the sender chooses (SpecContent.swift). A pointer is into the request, under
    /// `/headers/` or `/body/`; each says why it is free.
    static func compileFreeContent(_ json: JSONValue?, seed: String?, issues: inout [SpecIssue]) -> [FreeContent] {
        guard let json else { return [] }
        let at = JSONPointer(tokens: ["content"])
        guard let object = json.objectValue else {
            issues.append(SpecIssue("\"content\" is {\"free\": [{\"pointer\", \"why\", \"source\"}]}", at: at))
            return []
        }
        for key in object.keys where key != "free" { issues.append(SpecIssue("unknown key \"\(key)\" in content", at: at.appending(key))) }
        guard let list = object["free"]?.arrayValue else {
            issues.append(SpecIssue("\"content.free\" is an array of {\"pointer\", \"why\", \"source\"}", at: at.appending("free")))
            return []
        }
        var free: [FreeContent] = []
        for (i, item) in list.enumerated() {
            let here = at.appending("free").appending(i)
            guard let entry = item.objectValue else {
                issues.append(SpecIssue("a free field is {\"pointer\", \"why\", \"source\"}", at: here))
                continue
            }
            for key in entry.keys where !["pointer", "why", "source"].contains(key) {
                issues.append(SpecIssue("unknown key \"\(key)\" in a free field", at: here.appending(key)))
            }
            guard let text = entry["pointer"]?.stringValue, let pointer = JSONPointer(text),
                  ["headers", "body"].contains(pointer.tokens.first ?? ""), pointer.tokens.count >= 2 else {
                issues.append(SpecIssue("\"pointer\" is a JSON pointer under /headers/ or /body/", at: here.appending("pointer")))
                continue
            }
            guard let why = entry["why"]?.stringValue, !why.isEmpty else {
                issues.append(SpecIssue("a free field says \"why\" the sender may choose it", at: here.appending("why")))
                continue
            }
            var source: SpecSource?
            if let text = entry["source"] { source = Self.source(text, at: here, seed: seed, issues: &issues) }
            free.append(FreeContent(pointer: pointer, why: why, source: source))
        }
        return free
    }

    /// Every `x-source` inside the schema must parse (the root one is checked by the caller).
    static func checkSchemaSources(_ node: JSONValue, at pointer: JSONPointer, seed: String?, issues: inout [SpecIssue]) {
        switch node {
        case .object(let object):
            for (key, value) in object.entries {
                if key == "x-source" {
                    do { _ = try SpecSource.parse(value, defaultSeed: seed) } catch { issues.append(error.prefixed(pointer.appending(key))) }
                } else if !["const", "enum", "default", "examples"].contains(key) {
                    checkSchemaSources(value, at: pointer.appending(key), seed: seed, issues: &issues)
                }
            }
        case .array(let items):
            for (i, item) in items.enumerated() { checkSchemaSources(item, at: pointer.appending(i), seed: seed, issues: &issues) }
        default:
            break
        }
    }

    static func compileMatch(_ json: JSONValue?, transport: PushTransport, config: JSONValue, issues: inout [SpecIssue]) -> SpecMatch? {
        let at = JSONPointer(tokens: ["match"])
        guard let object = json?.objectValue else {
            issues.append(SpecIssue("\"match\" is required: {\"route\", \"all\": [conditions]}", at: at))
            return nil
        }
        for key in object.keys where !["route", "method", "all", "source"].contains(key) {
            issues.append(SpecIssue("unknown key \"\(key)\" in match", at: at.appending(key)))
        }
        var route = GatewayRoute(transport)
        if let given = object["route"] {
            if let named = given.stringValue.flatMap(GatewayRoute.init(rawValue:)), named.carriesPushes {
                route = named
            } else {
                issues.append(SpecIssue("\"route\" must be \"apns\" or \"fcm\"", at: at.appending("route")))
            }
        }
        var conditions: [MatchCondition] = []
        for (i, item) in (object["all"]?.arrayValue ?? []).enumerated() {
            let here = at.appending("all").appending(i)
            guard let condition = item.objectValue, let text = condition["pointer"]?.stringValue else {
                issues.append(SpecIssue("a match condition is {\"pointer\", \"equals\" | \"present\" | \"absent\"}", at: here))
                continue
            }
            let kinds = condition.keys.filter { $0 != "pointer" }
            guard kinds.count == 1, let kindName = kinds.first else {
                issues.append(SpecIssue("a match condition has exactly one of \"equals\", \"present\", \"absent\"", at: here))
                continue
            }
            let kind: MatchCondition.Kind
            switch kindName {
            case "equals": kind = .equals(condition["equals"] ?? .null)
            case "present" where condition["present"] == .bool(true): kind = .present
            case "absent" where condition["absent"] == .bool(true): kind = .absent
            default:
                issues.append(SpecIssue("unknown match condition kind \"\(kindName)\"", at: here.appending(kindName)))
                continue
            }
            do throws(SpecIssue) {
                let reference = try SpecReference.parse(text, config: config)
                switch reference {
                case .header, .body: break
                default: throw SpecIssue("match conditions read /headers or /body")
                }
                conditions.append(MatchCondition(pointer: JSONPointer(text) ?? .root, reference: reference, kind: kind))
            } catch {
                issues.append(error.prefixed(here.appending("pointer")))
            }
        }
        if object["all"] == nil { issues.append(SpecIssue("\"match\" needs \"all\": [conditions]", at: at)) }
        return SpecMatch(route: route, method: object["method"]?.stringValue, conditions: conditions)
    }

    static func compileHeaderRule(_ json: JSONValue, at: JSONPointer, config: JSONValue, seed: String?,
                                  issues: inout [SpecIssue]) -> HeaderRule? {
        guard let object = json.objectValue, let rawName = object["name"]?.stringValue, !rawName.isEmpty else {
            issues.append(SpecIssue("a header rule is {\"name\", <kind>, \"source\"}", at: at))
            return nil
        }
        let name = asciiLowercased(rawName)
        let known: Set<String> = Set(HeaderRule.kindKeys + ["name", "id", "optional", "tolerance", "source"])
        for key in object.keys where !known.contains(key) {
            issues.append(SpecIssue("unknown header rule kind \"\(key)\"; known: \(HeaderRule.kindKeys.joined(separator: ", "))", at: at.appending(key)))
        }
        let kinds = object.keys.filter { HeaderRule.kindKeys.contains($0) }
        guard kinds.count == 1, let kindName = kinds.first, let argument = object[kindName] else {
            issues.append(SpecIssue("a header rule has exactly one kind of \(HeaderRule.kindKeys.joined(separator: ", "))", at: at))
            return nil
        }
        let here = at.appending(kindName)
        let kind: HeaderRule.Kind
        switch (kindName, argument) {
        case ("required", .bool(true)): kind = .required
        case ("forbidden", .bool(true)): kind = .forbidden
        case ("integer", .bool(true)): kind = .integer
        case ("equals", .string(let s)): kind = .equals(s)
        case ("prefix", .string(let s)): kind = .prefix(s)
        case ("suffix", .string(let s)): kind = .suffix(s)
        case ("pattern", .string(let s)):
            do { kind = .pattern(try CompiledPattern(s)) } catch {
                issues.append(SpecIssue("\"\(s)\" is not a regular expression: \(error)", at: here))
                return nil
            }
        case ("oneOf", .array(let items)) where items.allSatisfy({ $0.stringValue != nil }):
            kind = .oneOf(items.compactMap(\.stringValue))
        case ("derived", _):
            do {
                kind = .derived(try SpecExpression.parse(argument, config: config), tolerance: object["tolerance"]?.doubleValue ?? 0)
            } catch {
                issues.append(error.prefixed(here))
                return nil
            }
        default:
            issues.append(SpecIssue("\"\(kindName)\" takes \(["required", "forbidden", "integer"].contains(kindName) ? "true" : kindName == "oneOf" ? "an array of strings" : "a string")", at: here))
            return nil
        }
        guard let source = source(object["source"], at: at, seed: seed, issues: &issues) else { return nil }
        let id = object["id"]?.stringValue ?? "header:\(name)"
        return HeaderRule(id: id, name: name, kind: kind, optional: object["optional"] == .bool(true), source: source)
    }

    static func compileDerivedRule(_ json: JSONValue, at: JSONPointer, config: JSONValue, seed: String?,
                                   issues: inout [SpecIssue]) -> DerivedRule? {
        guard let object = json.objectValue else {
            issues.append(SpecIssue("a derived rule is {\"id\", \"target\", \"equals\" | \"absent\", \"source\"}", at: at))
            return nil
        }
        let known: Set<String> = ["id", "target", "equals", "absent", "tolerance", "when", "optional", "source", "description"]
        var broken = false
        for key in object.keys where !known.contains(key) {
            issues.append(SpecIssue("unknown derived rule kind \"\(key)\"; a derived rule has \"equals\" or \"absent\"", at: at.appending(key)))
            broken = true
        }
        guard let id = object["id"]?.stringValue, !id.isEmpty else {
            issues.append(SpecIssue("a derived rule needs an \"id\"", at: at))
            return nil
        }
        var target: SpecReference?
        if let text = object["target"]?.stringValue {
            do {
                let reference = try SpecReference.parse(text, config: config)
                switch reference {
                case .header, .body: target = reference
                default: issues.append(SpecIssue("a target is a /headers or /body pointer", at: at.appending("target")))
                }
            } catch {
                issues.append(error.prefixed(at.appending("target")))
            }
        } else {
            issues.append(SpecIssue("a derived rule needs a \"target\" pointer", at: at.appending("target")))
        }
        var kind: DerivedRule.Kind?
        switch (object["equals"], object["absent"]) {
        case (let expression?, nil):
            do { kind = .equals(try SpecExpression.parse(expression, config: config), tolerance: object["tolerance"]?.doubleValue ?? 0) }
            catch { issues.append(error.prefixed(at.appending("equals"))) }
        case (nil, .bool(true)?):
            kind = .absent
        default:
            if !broken { issues.append(SpecIssue("a derived rule has exactly one of \"equals\" (an expression) or \"absent\": true", at: at)) }
        }
        var when: SpecCondition?
        if let condition = object["when"] {
            do { when = try SpecCondition.parse(condition, config: config) } catch { issues.append(error.prefixed(at.appending("when"))) }
        }
        let ruleSource = source(object["source"], at: at, seed: seed, issues: &issues)
        guard let target, let kind, let ruleSource, !broken else { return nil }
        return DerivedRule(id: "derived:" + id, target: target, kind: kind, when: when,
                           optional: object["optional"] == .bool(true), source: ruleSource)
    }

    /// The default path is one the product claims on FCM (its first `fcm_project`); an APNs
    /// example names its topic in its headers.
    static func compileExample(_ json: JSONValue, index: Int, transport: PushTransport, product: String, config: JSONValue,
                               issues: inout [SpecIssue]) -> SpecExample? {
        let at = JSONPointer(tokens: ["examples", String(index)])
        guard let object = json.objectValue, let body = object["body"] else {
            issues.append(SpecIssue("an example is {\"name\"?, \"path\"?, \"headers\": {name: value}, \"body\": payload}", at: at))
            return nil
        }
        var headers: [(name: String, value: String)] = []
        for (name, value) in object["headers"]?.objectValue ?? JSONObject() {
            guard let text = value.stringValue else {
                issues.append(SpecIssue("header values are strings", at: at.appending("headers").appending(name)))
                continue
            }
            headers.append((name, text))
        }
        let defaultPath = transport == .apns
            ? "/3/device/" + String(repeating: "ab", count: 32)
            : "/v1/projects/\(config[product]?["fcm_project"].flatMap { $0.stringValue ?? $0[0]?.stringValue } ?? "example-project")/messages:send"
        return SpecExample(name: object["name"]?.stringValue ?? "example \(index)", route: GatewayRoute(transport),
                           method: object["method"]?.stringValue ?? "POST", path: object["path"]?.stringValue ?? defaultPath,
                           headers: headers, body: body)
    }
}

import HTTPCore
import JSON
import PushModel

/// Every push spec of a spec directory, compiled once, and the judge of requests against them.
///
/// A request first selects its product by what identifies the sending app (`ProductIdentities`:
/// the APNs topic's bundle id, the FCM project in the path); a request no product claims is not
/// covered by any spec, and is no violation. Among the claiming product's specs, the one that
/// recognises the request (its `match`) judges it; when several do, the one with the most match
/// conditions wins (the linter reports such overlaps). A claimed request none of its product's
/// specs recognises is a violation, `unmatched`. Out-of-scope routes and paths (specset.json
/// `outOfScope`: the OAuth token endpoint carries no push) are not judged at all.
public struct SpecSet: Sendable {
    /// Sorted by id.
    public let specs: [PushSpec]
    /// Product names from specset.json (`poolse`, `yama`, `concierge`).
    public let products: [String]
    /// The `config` object of specset.json, after overrides.
    public let config: JSONValue
    public let outOfScopeRoutes: [GatewayRoute]
    public let outOfScopePaths: [String]
    /// Which product claims a request.
    let identities: ProductIdentities
    /// Indices into `specs`, per product (indexed as `products`), by route: a handful of
    /// routes, where comparing small strings beats hashing one per request.
    let specsByProduct: [[(route: GatewayRoute, specs: [Int])]]
    /// The same lists with their matches compiled for a body on a tape (`passingVerdict`).
    let tapeMatches: TapeMatchTable
    /// The files it was compiled from and the overrides it was compiled with, so it can be
    /// compiled again for another app (`claiming`); nil for a set built in memory.
    fileprivate(set) var sources: (specset: [UInt8], files: [(path: String, bytes: [UInt8])], configOverrides: JSONObject)?

    init(specs: [PushSpec], products: [String], config: JSONValue, outOfScopeRoutes: [GatewayRoute], outOfScopePaths: [String]) {
        self.specs = specs.sorted { $0.id < $1.id }
        self.products = products
        self.config = config
        self.outOfScopeRoutes = outOfScopeRoutes
        self.outOfScopePaths = outOfScopePaths
        identities = ProductIdentities(products: products, config: config)
        var byProduct = [[(route: GatewayRoute, specs: [Int])]](repeating: [], count: products.count)
        for (i, spec) in self.specs.enumerated() {
            guard let product = products.firstIndex(of: spec.product) else { continue }  // a compile issue already
            if let existing = byProduct[product].firstIndex(where: { $0.route == spec.match.route }) {
                byProduct[product][existing].specs.append(i)
            } else {
                byProduct[product].append((spec.match.route, [i]))
            }
        }
        specsByProduct = byProduct
        tapeMatches = TapeMatchTable(specs: self.specs, productCount: products.count, byProduct: byProduct)
    }

    /// The products that claim a request on `route` with this path and `apns-topic` (one on
    /// APNs; on FCM every product listing the project), or what the request carried instead.
    public func claimants(route: GatewayRoute, path: String, topic: String?) -> Result<[String], UncoveredRequest> {
        identities.claimants(route: route, path: path, topic: topic).map { $0.map { products[$0] } }
    }

    public func spec(id: String) -> PushSpec? { specs.first { $0.id == id } }

    /// True when requests on this route or path are not push sends and are not judged.
    public func isOutOfScope(route: GatewayRoute, path: String) -> Bool {
        if outOfScopeRoutes.contains(route) { return true }
        // A prefix covers the path itself, its sub-paths and its query: "/token", "/token/x", "/token?a".
        for prefix in outOfScopePaths where path.utf8.starts(with: prefix.utf8) {
            let rest = path.utf8.dropFirst(prefix.utf8.count)
            if rest.isEmpty || rest.first == UInt8(ascii: "/") || rest.first == UInt8(ascii: "?") { return true }
        }
        return false
    }

    /// Judges one request on the gateway's `route`; `body` is parsed once here.
    public func judge(route: GatewayRoute, method: String, path: String,
                      headers: [(name: String, value: String)], body: [UInt8]) -> SpecVerdict {
        judge(route: route, method: method, path: path, fields: HTTPFields(lowercasingNames: headers), body: body,
              parsedBody: nil, tape: nil)
    }

    /// `judge` with the body already parsed: `parsedBody`, when given, must be what
    /// `JSONParser.parse(body)` returns, and the judge works on that tree; nil reads `body`
    /// here, on a tape where it can (cheaper: the gateway no longer parses for the judge). The
    /// tree path is what the tape path must agree with (`SpecTapeJudgeTests`).
    public func judge(route: GatewayRoute, method: String, path: String,
                      headers: [(name: String, value: String)], body: [UInt8], parsedBody: JSONValue?) -> SpecVerdict {
        judge(route: route, method: method, path: path, fields: HTTPFields(lowercasingNames: headers), body: body,
              parsedBody: parsedBody, tape: nil)
    }

    /// `judge` on a tape of `body` the caller has built already: `tape` must be what
    /// `JSONParser.tape(body)` returns (the gateway reads an APNs payload's `aps` from it too,
    /// so the body is scanned once).
    public func judge(route: GatewayRoute, method: String, path: String,
                      headers: [(name: String, value: String)], body: [UInt8], tape: JSONTape) -> SpecVerdict {
        judge(route: route, method: method, path: path, fields: HTTPFields(lowercasingNames: headers), body: body,
              parsedBody: nil, tape: tape)
    }

    /// `judge` on a request's fields as the gateway received them (lowercase names, as bytes:
    /// only a header a rule reads becomes text), on `tape` when the caller has one of `body`.
    public func judge(route: GatewayRoute, method: String, path: String, fields: HTTPFields, body: [UInt8],
                      tape: JSONTape? = nil) -> SpecVerdict {
        judge(route: route, method: method, path: path, fields: fields, body: body, parsedBody: nil, tape: tape)
    }

    /// What `judge` finds, with a pass said by the spec's place in `specs` alone: the gateway
    /// keeps each spec's passing verdict as it records it, so on its common path no
    /// `SpecVerdict` is made, copied out through the judge's layers, mapped to its recorded
    /// form and destroyed (a judged push 6.00 → 5.85 µs of CPU, `serve-alternate.sh`, two windows).
    public enum Judgement: Sendable {
        /// The request keeps every rule of `specs[specIndex]`.
        case passed(specIndex: Int)
        /// Anything else: a violation, no spec matched, no product claims it, out of scope.
        case verdict(SpecVerdict)
    }

    /// `judge(route:method:path:fields:body:tape:)`, a pass as the spec's index.
    public func judgement(route: GatewayRoute, method: String, path: String, fields: HTTPFields, body: [UInt8],
                          tape: JSONTape? = nil) -> Judgement {
        if isOutOfScope(route: route, path: path) { return .verdict(SpecVerdict(specID: nil, violations: [], outOfScope: true)) }
        switch passingVerdict(route: route, method: method, path: path, fields: fields, body: body, tape: tape) {
        case .passed(let index): return .passed(specIndex: index)
        case .undecided(let tape, let bodyRead):
            return .verdict(fullVerdict(route: route, method: method, path: path, fields: fields, body: body, parsedBody: nil,
                                        tape: tape, bodyRead: bodyRead))
        }
    }

    private func judge(route: GatewayRoute, method: String, path: String, fields headers: HTTPFields, body: [UInt8],
                       parsedBody: JSONValue?, tape givenTape: JSONTape?) -> SpecVerdict {
        guard let parsedBody else {
            switch judgement(route: route, method: method, path: path, fields: headers, body: body, tape: givenTape) {
            case .passed(let index): return SpecVerdict(specID: specs[index].id, specIndex: index, violations: [])
            case .verdict(let verdict): return verdict
            }
        }
        if isOutOfScope(route: route, path: path) { return SpecVerdict(specID: nil, violations: [], outOfScope: true) }
        return fullVerdict(route: route, method: method, path: path, fields: headers, body: body, parsedBody: parsedBody,
                           tape: givenTape, bodyRead: givenTape != nil)
    }

    /// The judge's every step, for a request `passingVerdict` did not show to pass (or a
    /// parsed body): `tape` and `bodyRead` as it left them.
    private func fullVerdict(route: GatewayRoute, method: String, path: String, fields headers: HTTPFields, body: [UInt8],
                             parsedBody: JSONValue?, tape givenTape: JSONTape?, bodyRead: Bool) -> SpecVerdict {
        // Identity before the body: a push of an app no product ships is nobody's to judge.
        let claimants: [Int]
        switch identities.claimants(route: route, path: path, topic: route == .apns ? headers.value(of: "apns-topic") : nil) {
        case .success(let products): claimants = products
        case .failure(let uncovered): return SpecVerdict(specID: nil, violations: [], uncovered: uncovered)
        }
        var violations: [SpecViolation] = []
        let request: RequestView
        if let parsedBody {
            request = RequestView(path: path, headers: headers, body: parsedBody)
        } else if let givenTape {
            request = RequestView(path: path, headers: headers, tape: givenTape)
        } else if body.isEmpty {
            request = RequestView(path: path, headers: headers, body: nil)
        } else if !bodyRead, let tape = JSONParser.tape(body) {
            // The common case: no tree, no String per key and value (see JSONTape).
            request = RequestView(path: path, headers: headers, tape: tape)
        } else {
            var parsed: JSONValue?
            do { parsed = try JSONParser.parse(body) } catch {
                violations.append(SpecViolation(pointer: JSONPointer(tokens: ["body"]), rule: "body-json", source: nil,
                                                expected: "a JSON document", found: nil, message: "the body is not JSON: \(error)"))
            }
            request = RequestView(path: path, headers: headers, body: parsed)
        }
        var chosen: Int?
        for product in claimants {
            for index in specsByProduct[product].first(where: { $0.route == route })?.specs ?? [] {
                let spec = specs[index]
                if let wanted = spec.match.method, wanted != method { continue }
                guard spec.match.recognises(request) else { continue }
                if let current = chosen, specs[current].specificity >= spec.specificity { continue }
                chosen = index
            }
        }
        guard let chosen else {
            let name = claimants.map { products[$0] }.joined(separator: " or ")
            violations.append(SpecViolation(pointer: .root, rule: "unmatched", source: nil,
                                            expected: "a push one of \(name)'s \(route.rawValue) specs recognises",
                                            found: unmatchedSummary(request),
                                            message: "no \(name) spec matches this push (\(method) \(path), claimed by \(name) by its "
                                                + (route == .fcm ? "FCM project" : "apns-topic") + ")"))
            return SpecVerdict(specID: nil, violations: violations)
        }
        let spec = specs[chosen]
        spec.check(request, into: &violations)
        return SpecVerdict(specID: spec.id, specIndex: chosen, violations: violations)
    }

    enum PassingOutcome {
        /// The index in `specs` of the spec whose every rule the request keeps.
        case passed(Int)
        /// Not shown to pass here; `tape` is the body's when one was given or built, and
        /// `bodyRead` whether a tape was given or tried (so the body is not read for one twice).
        case undecided(tape: JSONTape?, bodyRead: Bool)
    }

    /// The verdict on a push that keeps every rule of the spec that recognises it, worked out
    /// on the fields' bytes and the body's tape with nothing built for it: no String of the
    /// topic, no copy of a match condition, no request view unless a step reads text. Judging
    /// a passing ring push spent about a third of its time on those (perf, `serve --specs`).
    /// Every decision is the full judge's, taken with the same function or on the same bytes,
    /// so a verdict given here is the one the full judge gives (`SpecTapeJudgeTests`); anything
    /// unclaimed, unmatched or broken is `undecided`, and the full judge decides and explains.
    private func passingVerdict(route: GatewayRoute, method: String, path: String, fields: HTTPFields, body: [UInt8],
                                tape givenTape: JSONTape?) -> PassingOutcome {
        // Claimed as `claimants` claims, before the body is read.
        var apnsProduct = -1
        var fcmProducts: [Int] = []
        switch route {
        case .apns:
            let product = fields.withUnsafeFields { fields -> Int? in
                guard let topic = fields.firstIndex(of: "apns-topic") else { return nil }
                return identities.product(ofTopic: fields.value(at: topic))
            }
            guard let product else { return .undecided(tape: givenTape, bodyRead: givenTape != nil) }
            apnsProduct = product
        case .fcm:
            guard case .success(let products) = identities.claimants(route: route, path: path, topic: nil) else {
                return .undecided(tape: givenTape, bodyRead: givenTape != nil)
            }
            fcmProducts = products
        case .oauth, .unknown:
            return .undecided(tape: givenTape, bodyRead: givenTape != nil)
        }
        guard let tape = givenTape ?? (body.isEmpty ? nil : JSONParser.tape(body)) else {
            return .undecided(tape: nil, bodyRead: !body.isEmpty)
        }
        var view: RequestView?
        var chosen = -1, chosenSpecificity = 0
        let productCount = apnsProduct >= 0 ? 1 : fcmProducts.count
        for p in 0..<productCount {
            let slot = TapeMatchTable.slot(product: apnsProduct >= 0 ? apnsProduct : fcmProducts[p], route: route)
            for c in tapeMatches.slotStarts[slot]..<tapeMatches.slotStarts[slot + 1] {
                let candidate = tapeMatches.candidates[c]
                if let wanted = tapeMatches.methods[c], wanted != method { continue }
                var recognised = true
                for k in Int(candidate.conditionStart)..<Int(candidate.conditionEnd) {
                    switch tapeMatches.test(k, on: tape) {
                    case .holds: continue
                    case .fails: recognised = false
                    case .undecided:
                        if view == nil { view = RequestView(path: path, headers: fields, tape: tape) }
                        recognised = specs[candidate.spec].match.conditions[tapeMatches.conditions[k].index].holds(view!)
                    }
                    if !recognised { break }
                }
                guard recognised else { continue }
                if chosen >= 0, chosenSpecificity >= candidate.specificity { continue }
                chosen = candidate.spec
                chosenSpecificity = candidate.specificity
            }
        }
        guard chosen >= 0 else { return .undecided(tape: tape, bodyRead: true) }
        let spec = specs[chosen]
        var violations: [SpecViolation] = []
        let headersOnBytes = spec.headerRules.withUnsafeBufferPointer { rules in
            fields.withUnsafeFields { fields in
                for i in rules.indices {
                    // The spec holds its rules for the call, so each is borrowed: a retain and
                    // a release of each around its test was ~1/20 of judging a passing ring (perf).
                    let passes = Unmanaged.passUnretained(rules[i])._withUnsafeGuaranteedRef { $0.passes(onBytes: fields, nil) }
                    if !passes { return false }
                }
                return true
            }
        }
        if !headersOnBytes {
            if view == nil { view = RequestView(path: path, headers: fields, tape: tape) }
            for rule in spec.headerRules { rule.check(view!, into: &violations) }
        }
        guard violations.isEmpty, spec.bodyAccepts(tape) else { return .undecided(tape: tape, bodyRead: true) }
        if !spec.derivedRules.isEmpty {
            if view == nil { view = RequestView(path: path, headers: fields, tape: tape) }
            for rule in spec.derivedRules { rule.check(view!, into: &violations) }
        }
        guard violations.isEmpty else { return .undecided(tape: tape, bodyRead: true) }
        return .passed(chosen)
    }

    /// Judges a spec's example as the gateway would see it.
    public func judge(_ example: SpecExample) -> SpecVerdict {
        judge(route: example.route, method: example.method, path: example.path, headers: example.headers, body: example.bodyBytes)
    }

    /// The branch fields poolse documents ("Branch on those two fields"), to make an unmatched
    /// record readable.
    private func unmatchedSummary(_ request: RequestView) -> String? {
        guard let body = request.body else { return nil }
        let data = body["message"]?["data"] ?? body
        var object = JSONObject()
        for key in ["type", "event", "source"] { if let v = data[key] { object[key] = v } }
        return object.isEmpty ? nil : JSONValue.object(object).serialized()
    }
}

extension SpecSet {
    /// Parses a spec set from in-memory files, for tests and for `load(directory:)`.
    /// `files` maps paths relative to the spec directory (`specset.json`, `poolse/ring.apns.json`)
    /// to their bytes.
    static func compile(specset: [UInt8], files: [(path: String, bytes: [UInt8])], configOverrides: JSONObject,
                        strictSchema: Bool) -> (set: SpecSet?, issues: [(file: String, issue: SpecIssue)]) {
        var issues: [(file: String, issue: SpecIssue)] = []
        let setJSON: JSONValue
        do { setJSON = try JSONParser.parse(specset, options: .init(duplicateKeys: .reject)) } catch {
            return (nil, [("specset.json", SpecIssue("not JSON: \(error)"))])
        }
        guard let setObject = setJSON.objectValue else { return (nil, [("specset.json", SpecIssue("specset.json is a JSON object"))]) }
        for key in setObject.keys where !["format", "description", "products", "config", "outOfScope"].contains(key) {
            issues.append(("specset.json", SpecIssue("unknown key \"\(key)\"", at: JSONPointer(tokens: [key]))))
        }
        let products = setObject["products"]?.objectValue?.keys ?? []
        if products.isEmpty { issues.append(("specset.json", SpecIssue("\"products\" must name at least one product", at: JSONPointer(tokens: ["products"])))) }
        var config = setObject["config"]?.objectValue ?? JSONObject()
        for (key, value) in configOverrides { config[key] = merge(config[key], value) }
        let configValue = JSONValue.object(config)
        let outOfScope = setObject["outOfScope"]
        // A name that is no route of the gateway's would leave nothing out: not kept.
        let routes = outOfScope?["routes"]?.arrayValue?.compactMap { $0.stringValue.flatMap(GatewayRoute.init(rawValue:)) } ?? []
        let paths = outOfScope?["paths"]?.arrayValue?.compactMap(\.stringValue) ?? []

        var specs: [PushSpec] = []
        for (path, bytes) in files {
            let json: JSONValue
            do { json = try JSONParser.parse(bytes, options: .init(duplicateKeys: .reject)) } catch {
                issues.append((path, SpecIssue("not JSON: \(error)")))
                continue
            }
            var fileIssues: [SpecIssue] = []
            if let spec = SpecCompiler.compile(json, file: path, config: configValue, strictSchema: strictSchema, issues: &fileIssues) {
                if !products.contains(spec.product) {
                    fileIssues.append(SpecIssue("product \"\(spec.product)\" is not listed in specset.json", at: JSONPointer(tokens: ["product"])))
                }
                if specs.contains(where: { $0.id == spec.id }) {
                    fileIssues.append(SpecIssue("id \"\(spec.id)\" is used by another spec file", at: JSONPointer(tokens: ["id"])))
                }
                specs.append(spec)
            }
            issues.append(contentsOf: fileIssues.map { (path, $0) })
        }
        var set = SpecSet(specs: specs, products: products, config: configValue, outOfScopeRoutes: routes, outOfScopePaths: paths)
        set.sources = (specset, files, configOverrides)
        return (set, issues)
    }

    /// This set with `product` also claiming the app `bundleID` (APNs topics) and `fcmProject`
    /// (FCM paths): a team's own app, which specset.json cannot list. The product's spec rules
    /// that read its bundle ids (`/config/<product>/bundle_ids`) take the new one too. The set
    /// itself when the product claims both already, or when it was not compiled from files.
    public func claiming(product: String, bundleID: String?, fcmProject: String?) -> SpecSet {
        guard products.contains(product), let sources,
              let claim = ProductIdentities.claimingEntry(config: config, product: product, bundleIDs: bundleID.map { [$0] } ?? [],
                                                          fcmProjects: fcmProject.map { [$0] } ?? []) else { return self }
        var overrides = sources.configOverrides
        var productOverride = overrides[product]?.objectValue ?? JSONObject()
        for (key, value) in claim.entry { productOverride[key] = value }
        overrides[product] = .object(productOverride)
        let (set, issues) = Self.compile(specset: sources.specset, files: sources.files, configOverrides: overrides, strictSchema: false)
        guard issues.isEmpty, let set else { return self }
        return set
    }

    private static func merge(_ base: JSONValue?, _ override: JSONValue) -> JSONValue {
        guard case .object(var object)? = base, case .object(let extra) = override else { return override }
        for (key, value) in extra { object[key] = merge(object[key], value) }
        return .object(object)
    }
}

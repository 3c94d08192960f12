import JSON
import PushModel

/// Which product a request belongs to, from what identifies the sending app on the wire, never
/// from the payload: the APNs topic's bundle id, the FCM project in the path. A spec set judges
/// a request only with the specs of the product that claims it; a request no product claims is
/// not covered by any spec (a third-party app's push through the same gateway), which is
/// reported apart and is no violation.
///
/// The identities come from specset.json `config` (after `--spec-config` overrides):
/// `config.<product>.bundle_ids` (strings) and `config.<product>.fcm_project` (a string or a
/// list of strings). A product without an `fcm_project` claims no FCM request.
///
/// A bundle id names one app, so it belongs to one product. An FCM project may hold several
/// apps (the v1 path names only the project; the token names the app), so several products may
/// list one project: a push to it is then tried against all of their specs.
public struct ProductIdentities: Sendable {
    /// APNs topic → the product (one) claiming it: every bundle id, and every bundle id with each
    /// suffix a push type demands, so a request costs one lookup and no String of its own.
    private let topics: [String: [Int]]
    /// FCM project id → the products listing it, in specset.json order.
    private let fcmProjects: [String: [Int]]
    /// `topics` again as bytes, for `product(ofTopic:)`: a request's topic made a String and
    /// hashed was ~1/10 of judging a passing push (perf, `serve --specs`). Bucket b (by
    /// `topicBucket`) is `topicEntries[topicBucketStarts[b]..<topicBucketStarts[b + 1]]`, each
    /// entry the topic `topicBytes[start..<end]` and its product.
    private let topicEntries: [(start: Int, end: Int, product: Int)]
    private let topicBucketStarts: [Int]
    private let topicBytes: [UInt8]
    private static let topicBucketCount = 64
    /// Bundle ids listed by more than one product: a configuration error the linter reports
    /// (the first product listed keeps the bundle id).
    let conflicts: [(identity: String, products: [String])]
    /// FCM projects listed by more than one product: allowed, and their specs may overlap.
    let sharedFCMProjects: [(project: String, products: [String])]

    /// Topic suffixes a push type demands (apns.md: `voip` → `<bundle>.voip`, …): a topic with
    /// one of them still belongs to the bundle id before it.
    private static let topicSuffixes: [String] = APNSPushType.allCases.compactMap(\.requiredTopicSuffix)

    init(products: [String], config: JSONValue) {
        var topics: [String: [Int]] = [:], fcmProjects: [String: [Int]] = [:]
        var owners: [String: [String]] = [:]
        for (index, product) in products.enumerated() {
            let entry = config[product]
            for id in Self.strings(entry?["bundle_ids"]) {
                owners[id, default: []].append(product)
                if topics[id] == nil { topics[id] = [index] }
            }
            for id in Self.strings(entry?["fcm_project"]) where fcmProjects[id]?.contains(index) != true {
                fcmProjects[id, default: []].append(index)
            }
        }
        // Suffixed topics after every plain bundle id: a bundle id that happens to end in
        // `.voip` stays its own product's.
        for (id, index) in topics {
            for suffix in Self.topicSuffixes where topics[id + suffix] == nil { topics[id + suffix] = index }
        }
        self.topics = topics
        self.fcmProjects = fcmProjects
        // An empty topic is claimed by nobody (`claimants`), so it has no entry.
        var buckets = [[(topic: String, product: Int)]](repeating: [], count: Self.topicBucketCount)
        for (topic, products) in topics where !topic.isEmpty {
            buckets[Self.topicBucket(count: topic.utf8.count, last: topic.utf8.last!)].append((topic, products[0]))
        }
        var entries: [(start: Int, end: Int, product: Int)] = [], starts = [0], bytes: [UInt8] = []
        for bucket in buckets {
            for (topic, product) in bucket {
                let start = bytes.count
                bytes.append(contentsOf: topic.utf8)
                entries.append((start, bytes.count, product))
            }
            starts.append(entries.count)
        }
        topicEntries = entries
        topicBucketStarts = starts
        topicBytes = bytes
        conflicts = owners.filter { $0.value.count > 1 }.map { ($0.key, $0.value) }.sorted { $0.identity < $1.identity }
        sharedFCMProjects = fcmProjects.filter { $0.value.count > 1 }.map { ($0.key, $0.value.map { products[$0] }) }
            .sorted { $0.project < $1.project }
    }

    /// What `config` must say of `product` for it to claim `bundleIDs` and `fcmProjects` too:
    /// its entry's lists with the missing ones added (only the lists something is missing
    /// from), and which were missing; nil when it claims them all. What `SpecSet.claiming`
    /// compiles with, and what a message names as the `--spec-config` to pass.
    public static func claimingEntry(config: JSONValue, product: String, bundleIDs: [String], fcmProjects: [String])
        -> (entry: JSONObject, missingBundleIDs: [String], missingProjects: [String])? {
        let entry = config[product]
        let listedBundleIDs = strings(entry?["bundle_ids"]), listedProjects = strings(entry?["fcm_project"])
        var missingBundleIDs: [String] = [], missingProjects: [String] = []
        for id in bundleIDs where !listedBundleIDs.contains(id) && !missingBundleIDs.contains(id) { missingBundleIDs.append(id) }
        for id in fcmProjects where !listedProjects.contains(id) && !missingProjects.contains(id) { missingProjects.append(id) }
        guard !missingBundleIDs.isEmpty || !missingProjects.isEmpty else { return nil }
        var object = JSONObject()
        if !missingBundleIDs.isEmpty { object["bundle_ids"] = .array((listedBundleIDs + missingBundleIDs).map { .string($0) }) }
        if !missingProjects.isEmpty { object["fcm_project"] = .array((listedProjects + missingProjects).map { .string($0) }) }
        return (object, missingBundleIDs, missingProjects)
    }

    /// A string, or an array of strings; anything else lists nothing (how `bundle_ids` and
    /// `fcm_project` are read, for anyone who reads a spec config).
    public static func strings(_ value: JSONValue?) -> [String] {
        if let text = value?.stringValue { return [text] }
        return value?.arrayValue?.compactMap(\.stringValue) ?? []
    }

    /// The product indices that claim the request (one on APNs, one or more on FCM), or why none
    /// does (what the request carried, for reports that group unclaimed pushes).
    func claimants(route: GatewayRoute, path: String, topic: String?) -> Result<[Int], UncoveredRequest> {
        switch route {
        case .apns:
            guard let topic, !topic.isEmpty else { return .failure(UncoveredRequest(route: route, identity: nil)) }
            if let product = topics[topic] { return .success(product) }
            return .failure(UncoveredRequest(route: route, identity: topic))
        case .fcm:
            guard let project = Self.fcmProject(inPath: path) else { return .failure(UncoveredRequest(route: route, identity: nil)) }
            if let product = fcmProjects[project] { return .success(product) }
            return .failure(UncoveredRequest(route: route, identity: project))
        case .oauth, .unknown:
            return .failure(UncoveredRequest(route: route, identity: nil))
        }
    }

    /// The product claiming an APNs request whose `apns-topic` has these bytes, when one of the
    /// configured topics has exactly them (the same bytes are the same String, so `claimants`
    /// would find it too); nil otherwise, and `claimants` decides: a topic spelled with other
    /// bytes may still equal one as a String.
    func product(ofTopic topic: UnsafeBufferPointer<UInt8>) -> Int? {
        guard !topic.isEmpty else { return nil }
        let bucket = Self.topicBucket(count: topic.count, last: topic[topic.count - 1])
        return topicEntries.withUnsafeBufferPointer { entries in
            topicBytes.withUnsafeBufferPointer { bytes in
                for i in topicBucketStarts[bucket]..<topicBucketStarts[bucket + 1] {
                    let entry = entries[i]
                    if bytesEqual(UnsafeBufferPointer(rebasing: bytes[entry.start..<entry.end]), topic) { return entry.product }
                }
                return nil
            }
        }
    }

    /// Topics of one app differ in length (their suffixes), and apps in their last bytes.
    private static func topicBucket(count: Int, last: UInt8) -> Int {
        (count &* 31 &+ Int(last)) & (topicBucketCount - 1)
    }

    /// `<p>` of `/v1/projects/<p>/messages:send` (fcm.md, the HTTP v1 endpoint).
    static func fcmProject(inPath path: String) -> String? {
        let prefix = "/v1/projects/"
        guard path.utf8.starts(with: prefix.utf8) else { return nil }
        let project = path.utf8.dropFirst(prefix.utf8.count).prefix { $0 != UInt8(ascii: "/") && $0 != UInt8(ascii: "?") }
        return project.isEmpty ? nil : String(decoding: project, as: UTF8.self)
    }
}

/// A request no product claims, with what it carried instead: the APNs topic or the FCM
/// project (nil when it carried none, or on another route).
public struct UncoveredRequest: Error, Sendable, Equatable, Hashable {
    public var route: GatewayRoute
    public var identity: String?

    public init(route: GatewayRoute, identity: String?) {
        self.route = route
        self.identity = identity
    }

    /// What reports group by: `com.example.app`, `FCM project other-project`, `APNs pushes without apns-topic`.
    public var label: String {
        switch (route, identity) {
        case (.apns, let topic?): return topic
        case (.apns, nil): return "APNs pushes without apns-topic"
        case (.fcm, let project?): return "FCM project " + project
        case (.fcm, nil): return "FCM requests without a project in the path"
        case (.oauth, _), (.unknown, _): return "route " + route.rawValue
        }
    }
}

import Clocks
import Crypto
import Driver
import Foundation
import JSON
import PushModel
import Sender

/// `pushproof send`: the reference sender pushing the products' events at a gateway (the
/// mock, or Apple's and Google's), printing what became of every push.
struct SendCommand: Subcommand {
    static let spec = CommandSpec(
        name: "send",
        abstract: "Push poolse, Yama and Concierge events through the reference sender (demo, ring, message).",
        positionals: ["demo|ring|message"],
        options: [
            .value("members", "N", "ring, message: people in the group (member 0 calls or writes).", default: "1000"),
            .value("repeat", "N", "ring, message: events sent one after another (--build-only: timed rounds).",
                   default: "1, --build-only 5"),
            .value("devices", "FILE", "SQLite device store, created if missing; gone tokens are deleted from it.",
                   default: "in memory"),
            .value("admin", "URL", "demo: the gateway's control API (pushproof serve --admin); two of the demo's "
                   + "tokens are marked gone through it first."),
            .value("yama-bundle-id", "ID", "demo: the Yama tenant app's bundle id.", default: "--bundle-id"),
            .value("concierge-bundle-id", "ID", "demo: the Concierge customer app's bundle id.", default: "--bundle-id"),
            .value("json", "FILE", "Also write the results as JSON."),
            .value("expect-out", "FILE", "Write the deliveries made (each push the gateway accepted; in a dry run, each "
                   + "decided) as a 'pushproof check --expect' file: the oracle for another sender's run of the scenario."),
            .value("transport", "apns|fcm|both", "ring, message: only the pushes to APNs, or to FCM.", default: "both"),
            .flag("build-only", "ring, message: only evaluate the rules and build the payloads, timed; send nothing."),
        ] + SenderOptions.specs,
        discussion: """
        SCENARIOS:
          demo      a poolse group of 5: a group call (ring, one joins, one declines, the call ends:
                    ring_ended, finished, missed), a message with a mention, a read, a Yama and a
                    Concierge push; then a second ring, which skips the devices deleted on the way.
          ring      one group call ringing every other member's devices (2 pushes each).
          message   one text message to the group (2 pushes per recipient).

        Without --apns-key and --service-account nothing is sent: each push is logged as the
        request it would have been (local development, as the Concierge seed describes).
        Exit status: 0 every push delivered (or logged, or its dead token cleaned up); 1 some
        push failed; 2 a file could not be read or written; 64 usage.

        EXAMPLES:
          pushproof send demo --ca pushproof-cert-8443.pem --apns-key apns-key.p8 --key-id ABC123DEFG \\
              --team-id TEAM123456 --service-account service-account.json --admin http://127.0.0.1:8444
          pushproof send ring --members 10000 --h2c --gateway http://127.0.0.1:8080 --apns-key ... 
          pushproof send ring --members 10000 --build-only
        """)

    enum Scenario: String { case demo, ring, message }

    let scenario: Scenario
    let options: SenderOptions
    let members: Int
    let rounds: Int
    let devicesPath: String?
    let admin: AdminClient?
    let yamaBundleID: String
    let conciergeBundleID: String
    let jsonPath: String?
    let expectOutPath: String?
    let buildOnly: Bool
    let transports: Set<PushTransport>

    init(_ arguments: ParsedArguments) throws {
        guard let scenario = Scenario(rawValue: arguments.positionals[0]) else {
            throw UsageError(message: "unknown scenario '\(arguments.positionals[0])' (demo, ring or message)")
        }
        self.scenario = scenario
        options = try SenderOptions(arguments)
        buildOnly = arguments.has("build-only")
        if scenario == .demo {
            for name in ["members", "repeat"] where arguments.value(name) != nil {
                throw UsageError(message: "--\(name) is for ring and message; demo has a fixed group of 5")
            }
            if buildOnly { throw UsageError(message: "--build-only is for ring and message") }
        } else if arguments.value("admin") != nil {
            throw UsageError(message: "--admin is for demo")
        }
        members = try arguments.int("members", default: scenario == .demo ? 5 : 1000, range: 2...1_000_000)
        rounds = try arguments.int("repeat", default: buildOnly ? 5 : 1, range: 1...100_000)
        devicesPath = arguments.value("devices")
        admin = try arguments.value("admin").map { url throws(UsageError) in try AdminClient(url: url) }
        yamaBundleID = arguments.value("yama-bundle-id") ?? options.bundleID
        conciergeBundleID = arguments.value("concierge-bundle-id") ?? options.bundleID
        jsonPath = arguments.value("json")
        expectOutPath = arguments.value("expect-out")
        transports = try SenderOptions.transports(arguments)
        if scenario == .demo, transports.count < 2 { throw UsageError(message: "--transport is for ring and message") }
    }

    func run() async -> Int32 {
        if buildOnly {
            guard let timings = buildOnlyRun() else { return ExitCode.failure }
            if expectOutPath != nil { printError("pushproof send: --expect-out: --build-only sends nothing, so no file is written") }
            return writeJSON(timings, deliveries: nil)
        }
        let credentials: DeliveryCredentials
        let projectID: String
        let store: any DeviceStore
        do {
            (credentials, projectID) = try options.loadCredentials()
            store = try devicesPath.map { path throws(DeviceStoreError) in try SQLiteDeviceStore(path: path) } ?? InMemoryDeviceStore()
        } catch {
            printError("pushproof send: \(error)")
            return ExitCode.ioError
        }
        let dispatcher: DeliveryDispatcher
        do {
            dispatcher = try options.makeDispatcher(credentials: credentials, projectID: projectID, store: store,
                                                    log: { printNow($0) })
        } catch {
            printError("pushproof send: \(error)")
            return ExitCode.failure
        }
        let dryRun = credentials.apns == nil && credentials.fcm == nil
        var run = SendRun(dispatcher: dispatcher, dryRun: dryRun)
        printNow("pushproof send \(scenario.rawValue): APNs \(options.apnsURL), FCM \(options.fcmURL) (project \(projectID)), "
                 + "\(options.transportDescription), \(options.senders) delivery thread(s)"
                 + (dryRun ? "; no credentials: every push is logged, nothing is sent" : ""))
        if credentials.apns == nil, !dryRun { printNow("no --apns-key: APNs pushes are logged, not sent") }
        if credentials.fcm == nil, !dryRun { printNow("no --service-account: FCM pushes are logged, not sent") }
        var extra: JSONObject = [:]
        do {
            switch scenario {
            case .demo:
                extra = try await demo(&run, store: store, projectID: projectID)
            case .ring, .message:
                extra = try await fanOuts(&run, store: store, projectID: projectID)
            }
        } catch let error as AdminError {
            printError("pushproof send: \(error)")
            await dispatcher.shutdown()
            return ExitCode.failure
        } catch {
            printError("pushproof send: \(error)")
            await dispatcher.shutdown()
            return ExitCode.ioError
        }
        await dispatcher.shutdown()
        let statistics = dispatcher.statistics
        run.printByKind()
        printNow("connections opened \(statistics.connectionsOpened), requests \(statistics.attemptsSent) "
                 + "(retries \(statistics.retriesScheduled)), provider tokens signed \(statistics.providerTokensSigned), "
                 + "access tokens fetched \(statistics.accessTokensFetched)")
        var json = run.json
        json["scenario"] = .string(scenario.rawValue)
        json["transport"] = .string(options.transportDescription)
        json["delivery"] = deliveryJSON(statistics)
        for (key, value) in extra { json[key] = value }
        let status = writeJSON(json, deliveries: run.deliveriesJSON)
        if status != ExitCode.success { return status }
        return run.failedCount > 0 ? ExitCode.failure : ExitCode.success
    }

    private func writeJSON(_ json: JSONObject, deliveries: JSONValue?) -> Int32 {
        var files = ReportFiles(command: "send")
        files.write(jsonPath, JSONValue.object(json).serialized() + "\n")
        if let deliveries { files.write(expectOutPath, deliveries.serialized() + "\n") }
        return files.failed ? ExitCode.ioError : ExitCode.success
    }

    // MARK: - ring, message

    private func fanOuts(_ run: inout SendRun, store: any DeviceStore, projectID: String) async throws -> JSONObject {
        let app = AppConfig(iosBundleID: options.bundleID, fcmProjectID: projectID)
        let setupStart = SystemClock.monotonicNanoseconds()
        let workspace = try GroupWorkspace(members: members, store: store, app: app)
        printNow("group of \(members): \(members * 3) devices registered in "
                 + "\(Format.milliseconds(SystemClock.monotonicNanoseconds() - setupStart)) ms (\(devicesPath ?? "in memory"))")
        var roundsJSON: [JSONValue] = []
        var throughputs: [Double] = []
        for round in 1...rounds {
            let started = SystemClock.monotonicNanoseconds()
            var pushes = scenario == .ring
                ? try workspace.ring(callID: "call-\(round)-\(started)")
                : try workspace.message(id: "msg-\(round)-\(started)")
            if transports.count < 2 { pushes.removeAll { !transports.contains($0.transport) } }
            let built = SystemClock.monotonicNanoseconds()
            let step = await run.step(scenario == .ring ? "ring" : "message", pushes, startedAt: started).step
            let elapsed = Double(step.lastFinish &- started) / 1e9
            let throughput = elapsed > 0 ? Double(pushes.count) / elapsed : 0
            throughputs.append(throughput)
            let allLabel = scenario == .ring ? "time to ring all" : "time to notify all"
            printNow("  \(pushes.count) pushes built in \(Format.milliseconds(built - started)) ms; "
                     + "\(Format.significant(throughput)) pushes/s; \(allLabel) "
                     + (step.lastDelivered > 0 ? "\(Format.milliseconds(step.lastDelivered - started)) ms" : "n/a (none delivered)"))
            var entry = step.json
            entry["build_ms"] = .number(Double(built - started) / 1e6)
            entry["throughput_per_s"] = .number(throughput)
            entry[scenario == .ring ? "time_to_ring_all_ms" : "time_to_notify_all_ms"] =
                step.lastDelivered > 0 ? .number(Double(step.lastDelivered - started) / 1e6) : .null
            roundsJSON.append(.object(entry))
        }
        let median = throughputs.sorted()[throughputs.count / 2]
        if rounds > 1 { printNow("median throughput over \(rounds) rounds: \(Format.significant(median)) pushes/s") }
        return ["members": .number(Double(members)), "rounds": .array(roundsJSON), "median_throughput_per_s": .number(median)]
    }

    /// Times rule evaluation plus payload building alone (issue 4: it must cost a small
    /// fraction of delivery). The workspace is set up once, untimed; one untimed round warms up.
    private func buildOnlyRun() -> JSONObject? {
        let setupStart = SystemClock.monotonicNanoseconds()
        let workload = SenderWorkload(members: members)
        let setup = SystemClock.monotonicNanoseconds() - setupStart
        let isRing = scenario == .ring
        let build = { () throws -> [PushRequest] in isRing ? try workload.ringFanout() : try workload.messageFanout() }
        var perPush: [Double] = []
        var pushCount = 0
        do {
            pushCount = try build().count
            for _ in 0..<rounds {
                let start = SystemClock.monotonicNanoseconds()
                let pushes = try build()
                let elapsed = SystemClock.monotonicNanoseconds() - start
                perPush.append(Double(elapsed) / Double(max(1, pushes.count)))
            }
        } catch {
            printError("pushproof send: building the fan-out failed: \(error)")
            return nil
        }
        let sorted = perPush.sorted()
        let median = sorted[sorted.count / 2]
        printNow("build only: \(scenario.rawValue) fan-out of \(members) members = \(pushCount) pushes "
                 + "(rules + payloads, nothing sent); workspace set-up \(Format.milliseconds(setup)) ms")
        printNow("  per push: median \(Format.significant(median)) ns, best \(Format.significant(sorted[0])) ns "
                 + "over \(rounds) rounds = \(Format.significant(1e9 / median)) pushes/s built")
        return [
            "scenario": .string(scenario.rawValue), "build_only": true, "members": .number(Double(members)),
            "pushes": .number(Double(pushCount)), "rounds": .number(Double(rounds)),
            "ns_per_push_median": .number(median), "ns_per_push_best": .number(sorted[0]),
            "pushes_built_per_s": .number(1e9 / median),
        ]
    }

    // MARK: - demo

    private func demo(_ run: inout SendRun, store: any DeviceStore, projectID: String) async throws -> JSONObject {
        let names = ["Alice", "Bob", "Carol", "Dave", "Erin"]
        let users = names.map { User(id: "u-" + $0.lowercased(), externalID: "acme-" + $0.lowercased(), displayName: $0) }
        let (alice, bob, carol, dave, erin) = (users[0], users[1], users[2], users[3], users[4])
        var devicesByUser: [String: [Device]] = [:]
        for (index, user) in users.enumerated() {
            let devices = GroupWorkspace.devices(of: user.id, index: index, scope: 0xd0)
            devicesByUser[user.id] = devices
            for device in devices { try store.register(device) }
        }
        func device(_ user: User, _ platform: DevicePlatform, _ kind: IOSTokenKind? = nil) -> Device {
            devicesByUser[user.id]!.first { $0.platform == platform && (kind == nil || $0.kind == kind) }!
        }
        let label: [String: String] = Dictionary(uniqueKeysWithValues: users.flatMap { user in
            devicesByUser[user.id]!.map { d in
                (d.token, "\(user.displayName)'s " + (d.platform == .android ? "Android phone" : d.kind == .voip ? "iPhone (PushKit token)" : "iPhone (APNs token)"))
            }
        })
        printNow("poolse workspace 'Engineering': \(users.count) members, each with an iPhone (PushKit + APNs tokens) and an Android phone")

        // Two phones whose app was uninstalled: the gateway will answer 410 / UNREGISTERED.
        let goneDevices = [device(dave, .ios, .voip), device(erin, .android)]
        if let admin {
            for gone in goneDevices { try admin.setTokenState(gone.token, state: "gone") }
            printNow("marked gone at the gateway (\(admin.baseURL)): " + goneDevices.map { label[$0.token]! }.joined(separator: ", "))
        } else {
            printNow("no --admin: no token is marked gone, so nothing will be cleaned up")
        }

        let app = AppConfig(iosBundleID: options.bundleID, fcmProjectID: projectID)
        let rules = PoolseRules(app: app, settings: WorkspaceSettings(), devices: store,
                                grants: FixedGrants(call: "eyJhbGciOiJFUzI1NiJ9.demo-call", reply: "eyJhbGciOiJFUzI1NiJ9.demo-reply"),
                                clock: .system)
        let conversation = Conversation(id: "conv-engineering", kind: .group, name: "Engineering", members: users.map(\.id),
                                        mutedBy: [carol.id, erin.id])
        let now = PushClock.system.nowMilliseconds
        var call = Call.placed(id: "call-\(now)", conversation: conversation, caller: alice, media: .video, ringDeadline: now + 45_000)

        printNow("\n1. Alice calls the group: every other member's phones ring")
        let ringResults = await run.step("ring", try rules.callPlaced(call)).results
        printNow("\n2. Bob answers on his iPhone: his Android phone stops ringing")
        call.joined.insert(bob.id)
        await run.step("ring ended (answered elsewhere)",
                       try rules.ringEnded(call, stop: .answeredElsewhere(userID: bob.id, deviceToken: device(bob, .ios, .voip).token)))
        printNow("\n3. Carol declines on her iPhone: her Android phone stops ringing")
        call.declined.insert(carol.id)
        await run.step("ring ended (declined)",
                       try rules.ringEnded(call, stop: .declined(userID: carol.id, deviceToken: device(carol, .ios, .voip).token)))
        printNow("\n4. Alice hangs up: phones still ringing stop, Android phones hear the call finished, Dave and Erin missed it")
        await run.step("call ended", try rules.callEnded(call, reason: .finished))

        printNow("\n5. Alice writes to the group, mentioning Carol (Carol and Erin muted it: only Carol, mentioned, is notified of the two)")
        let message = Message(id: "msg-\(now)", conversationID: conversation.id, sender: alice,
                              text: "@Carol can you review the release notes?", mentions: [carol.id], sentAt: now)
        await run.step("message", try rules.messageSent(message, in: conversation,
                                                        unread: UnreadTotals([bob.id: 3, carol.id: 1, dave.id: 7])))
        printNow("\n6. Bob reads the conversation: his own devices clear the badge")
        await run.step("read", try rules.readCursorMoved(ReadCursorMove(
            readerID: bob.id, conversationID: conversation.id, previousPosition: 40, newPosition: 42,
            unreadMessagesPassed: 2, unreadTotal: 0)))

        printNow("\n7. Yama: a message in a tenant's room notifies the other member's iPhone")
        let yamaAuthor = YamaMember(userID: "y-alice", displayName: "Alice")
        let yamaReader = YamaMember(userID: "y-bob", displayName: "Bob")
        for (index, member) in [yamaAuthor, yamaReader].enumerated() {
            for device in GroupWorkspace.devices(of: member.userID, index: index, scope: 0xe0) { try store.register(device) }
        }
        let yama = YamaRules(tenant: YamaTenant(id: "acme", iosBundleID: yamaBundleID), devices: store)
        let room = YamaRoom(slug: "design", name: "Design", members: [yamaAuthor, yamaReader])
        await run.step("yama message", try yama.messageCreated(
            YamaMessage(id: "m_\(now)", authorID: yamaAuthor.userID, authorName: "Alice", text: "Standup moved to 10:30"), in: room))

        printNow("\n8. Concierge: a team reply is pushed to each of the customer's devices")
        for device in GroupWorkspace.devices(of: "cust-1", index: 0, scope: 0xc0) where device.kind != .voip {
            try store.register(device)
        }
        let concierge = ConciergeRules(app: ConciergeApp(name: "Shop", iosBundleID: conciergeBundleID, fcmProjectID: projectID,
                                                         showTeamNames: true), devices: store)
        await run.step("concierge reply", try concierge.reply(
            ConciergeReply(conversationID: "cnv_\(now)", messageID: "msg_\(now)", author: .teamMember(name: "Sam"),
                           text: "Your order has shipped.", unread: 1), toCustomer: "cust-1"))

        // What the sender deleted, and proof that the next call no longer rings it.
        let deleted = run.removed
        printNow("\ndevices deleted from the store (the gateway said their tokens are gone):")
        if deleted.isEmpty { printNow("  none") }
        for (device, reason) in deleted { printNow("  \(label[device.token] ?? device.userID) \(device.token) (\(reason))") }

        printNow("\n9. Alice calls again: the deleted devices are no longer rung")
        let again = Call.placed(id: "call-\(now + 1)", conversation: conversation, caller: alice, media: .audio, ringDeadline: now + 46_000)
        let secondRing = try rules.callPlaced(again)
        let deletedTokens = Set(deleted.map(\.device.token))
        let skipped = ringResults.map(\.result.device).filter { d in !secondRing.contains { $0.device.token == d.token } }
        let sentToDeleted = secondRing.filter { deletedTokens.contains($0.device.token) }.count
        await run.step("second ring", secondRing)
        printNow("  first ring \(run.steps[0].pushes) pushes, second ring \(secondRing.count): skipped "
                 + (skipped.isEmpty ? "nothing" : skipped.map { label[$0.token] ?? $0.token }.joined(separator: ", ")))

        let remaining = Set(try store.allDevices().map(\.token))
        return [
            "marked_gone": .array(admin == nil ? [] : goneDevices.map { .string($0.token) }),
            "deleted": .array(deleted.map { entry in
                ["token": .string(entry.device.token), "user": .string(entry.device.userID),
                 "platform": .string(entry.device.platform.rawValue), "reason": .string(entry.reason),
                 "still_in_store": .bool(remaining.contains(entry.device.token))]
            }),
            "second_ring": [
                "pushes": .number(Double(secondRing.count)),
                "first_ring_pushes": .number(Double(run.steps[0].pushes)),
                "skipped": .array(skipped.map { .string($0.token) }),
                "sent_to_deleted": .number(Double(sentToDeleted)),
            ],
        ]
    }

    private func deliveryJSON(_ s: DeliveryStatistics) -> JSONValue {
        [
            "submitted": .number(Double(s.submitted)), "delivered": .number(Double(s.delivered)),
            "failed": .number(Double(s.failed)), "tokens_removed": .number(Double(s.tokensRemoved)),
            "dry_runs": .number(Double(s.dryRuns)), "requests": .number(Double(s.attemptsSent)),
            "retries": .number(Double(s.retriesScheduled)), "connections_opened": .number(Double(s.connectionsOpened)),
            "provider_tokens_signed": .number(Double(s.providerTokensSigned)),
            "access_tokens_fetched": .number(Double(s.accessTokensFetched)),
            "devices_deleted": .number(Double(s.devicesDeleted)), "token_removal_errors": .number(Double(s.tokenRemovalErrors)),
            "token_cleanup_mean_ms": .number(Double(s.tokenCleanup.meanNanoseconds) / 1e6),
            "token_cleanup_max_ms": .number(Double(s.tokenCleanup.maxNanoseconds) / 1e6),
        ]
    }
}

/// The pushes of a `send` run, step by step, with their outcomes.
struct SendRun {
    struct Step {
        var name: String
        var pushes: Int
        var outcomes: [(key: String, count: Int)]
        var elapsedNanoseconds: UInt64
        /// Monotonic time of the last result, and of the last delivered push (0: none).
        var lastFinish: UInt64
        var lastDelivered: UInt64

        var json: JSONObject {
            [
                "step": .string(name), "pushes": .number(Double(pushes)),
                "outcomes": .object(JSONObject(outcomes.map { (key: $0.key, value: JSONValue.number(Double($0.count))) })),
                "elapsed_ms": .number(Double(elapsedNanoseconds) / 1e6),
            ]
        }
    }

    let dispatcher: DeliveryDispatcher
    let dryRun: Bool
    var steps: [Step] = []
    /// Per push kind, in order of first appearance: outcome counts.
    var byKind: [(kind: String, outcomes: [String: Int])] = []
    var removed: [(device: Device, reason: String)] = []
    var failedCount = 0
    /// Deliveries made (or, dry, decided) per device token and spec id, in order of first
    /// appearance: what `--expect-out` writes.
    var deliveries: [(token: String, spec: String, count: Int)] = []
    private var deliveryIndex: [String: Int] = [:]

    /// The spec a push of `kind` answers to: the Specs/ ids are `<kind>.<transport>`.
    mutating func noteDelivery(_ result: PushResult) {
        let spec = result.kind + "." + result.device.transport.rawValue
        let key = result.device.token + "\u{0}" + spec
        if let index = deliveryIndex[key] {
            deliveries[index].count += 1
        } else {
            deliveryIndex[key] = deliveries.count
            deliveries.append((result.device.token, spec, 1))
        }
    }

    /// `{"deliveries": [{"token", "spec", "count"?}]}`, the format `check --expect` reads.
    var deliveriesJSON: JSONValue {
        ["deliveries": .array(deliveries.map { delivery in
            var entry: JSONObject = ["token": .string(delivery.token), "spec": .string(delivery.spec)]
            if delivery.count > 1 { entry["count"] = .number(Double(delivery.count)) }
            return .object(entry)
        })]
    }

    init(dispatcher: DeliveryDispatcher, dryRun: Bool) {
        self.dispatcher = dispatcher
        self.dryRun = dryRun
    }

    /// Delivers `pushes`, prints one line about them, and returns the step with its results.
    @discardableResult
    mutating func step(_ name: String, _ pushes: [PushRequest], startedAt: UInt64? = nil) async -> (step: Step, results: [TimedResult]) {
        let start = startedAt ?? SystemClock.monotonicNanoseconds()
        let results = await dispatcher.deliverAll(pushes)
        let end = SystemClock.monotonicNanoseconds()
        var counts: [String: Int] = [:]
        var order: [String] = []
        var lastFinish = start, lastDelivered: UInt64 = 0
        for timed in results {
            let key = Self.key(timed.result.outcome)
            if counts[key] == nil { order.append(key) }
            counts[key, default: 0] += 1
            lastFinish = max(lastFinish, timed.finishedAt)
            switch timed.result.outcome {
            case .delivered, .dryRun: noteDelivery(timed.result)
            default: break
            }
            switch timed.result.outcome {
            case .delivered: lastDelivered = max(lastDelivered, timed.finishedAt)
            case .tokenRemoved(let reason): removed.append((timed.result.device, reason))
            case .failed: failedCount += 1
            case .dryRun: break
            }
            let kind = timed.result.kind
            if let index = byKind.firstIndex(where: { $0.kind == kind }) {
                byKind[index].outcomes[key, default: 0] += 1
            } else {
                byKind.append((kind, [key: 1]))
            }
        }
        let outcomes = order.map { (key: $0, count: counts[$0] ?? 0) }
        let step = Step(name: name, pushes: pushes.count, outcomes: outcomes, elapsedNanoseconds: end - start,
                        lastFinish: lastFinish, lastDelivered: lastDelivered)
        steps.append(step)
        let kinds = Array(Set(pushes.map(\.kind))).sorted().joined(separator: ", ")
        let summary = outcomes.isEmpty ? "" : ": " + outcomes.map { "\($0.count) \($0.key)" }.joined(separator: ", ")
        printNow("  \(name): \(pushes.count) push\(pushes.count == 1 ? "" : "es")"
                 + (kinds.isEmpty ? "" : " (\(kinds))") + summary + " in \(Format.milliseconds(end - start)) ms")
        return (step, results)
    }

    static func key(_ outcome: PushOutcome) -> String {
        switch outcome {
        case .delivered: "delivered"
        case .failed(let reason, let status): "failed \(reason)" + (status > 0 ? " (HTTP \(status))" : "")
        case .tokenRemoved(let reason): "token removed (\(reason))"
        case .dryRun: "logged (dry run)"
        }
    }

    func printByKind() {
        guard !byKind.isEmpty else { return }
        printNow("\nby push kind:")
        let width = byKind.map(\.kind.count).max() ?? 0
        for (kind, outcomes) in byKind {
            let total = outcomes.values.reduce(0, +)
            let detail = outcomes.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key)" }.joined(separator: ", ")
            printNow("  " + kind.padding(to: width + 1) + String(total).leftPadded(to: 6) + " sent: " + detail)
        }
    }

    var json: JSONObject {
        [
            "dry_run": .bool(dryRun),
            "steps": .array(steps.map { .object($0.json) }),
            "by_kind": .object(JSONObject(byKind.map { entry in
                (key: entry.kind, value: JSONValue.object(JSONObject(entry.outcomes.sorted { $0.key < $1.key }
                    .map { (key: $0.key, value: JSONValue.number(Double($0.value))) })))
            })),
            "pushes": .number(Double(steps.reduce(0) { $0 + $1.pushes })),
            "failed": .number(Double(failedCount)),
        ]
    }
}

extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}

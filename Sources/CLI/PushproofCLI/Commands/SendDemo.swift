import Clocks
import JSON
import PushModel
import Sender

extension SendCommand {
    // MARK: - demo

    func demo(_ run: inout SendRun, store: any DeviceStore, projectID: String) async throws -> JSONObject {
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
        let now = WallClock.system.nowMilliseconds
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
        let skipped = ringResults.map(\.device).filter { d in !secondRing.contains { $0.device.token == d.token } }
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
}

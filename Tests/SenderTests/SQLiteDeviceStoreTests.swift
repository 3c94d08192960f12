import Foundation
import PushModel
import PushproofTestSupport
import Testing
@testable import Sender

@Suite struct SQLiteDeviceStoreTests {
    let alice = Device(userID: "alice", platform: .ios, kind: .voip, token: String(repeating: "ab", count: 32))
    let aliceAlert = Device(userID: "alice", platform: .ios, kind: .alert, token: String(repeating: "cd", count: 32))
    let bobAndroid = Device(userID: "bob", platform: .android, token: "fcm-token-bob")

    @Test func registeringTwiceKeepsOneRow() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        try store.register(alice)
        try store.register(alice)
        try store.register(bobAndroid)
        #expect(try store.allDevices() == [alice, bobAndroid])
        #expect(try store.devices(of: "alice") == [alice])
        #expect(try store.devices(of: "carol") == [])
    }

    @Test func registeringAKnownTokenForAnotherUserMovesIt() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        try store.register(bobAndroid)
        let handedOver = Device(userID: "carol", platform: .android, token: bobAndroid.token)
        try store.register(handedOver)
        #expect(try store.devices(of: "bob") == [])
        #expect(try store.devices(of: "carol") == [handedOver])
    }

    @Test func removeDeletesByTokenAndReportsWhetherItWasThere() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        try store.register(alice)
        try store.register(aliceAlert)
        #expect(try store.remove(token: alice.token) == true)
        #expect(try store.remove(token: alice.token) == false)
        #expect(try store.devices(of: "alice") == [aliceAlert])
    }

    @Test func reopeningKeepsWhatWasWritten() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("devices.sqlite")
        do {
            let store = try SQLiteDeviceStore(path: path)
            try store.register(alice)
            try store.register(bobAndroid)
            try store.remove(token: bobAndroid.token)
        }
        let reopened = try SQLiteDeviceStore(path: path)
        #expect(try reopened.allDevices() == [alice])
    }

    @Test func journalIsWAL() throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        #expect(try store.journalMode() == "wal")
        try store.register(alice)
        #expect(FileManager.default.fileExists(atPath: directory.file("devices.sqlite-wal")))
    }

    @Test func aFileThatIsNotADatabaseGivesAClearError() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("devices.sqlite")
        try Data(repeating: 0x5A, count: 4096).write(to: URL(fileURLWithPath: path))
        #expect {
            _ = try SQLiteDeviceStore(path: path)
        } throws: { error in
            guard case .corruptDatabase(let reportedPath, _)? = error as? DeviceStoreError else { return false }
            return reportedPath == path
        }
    }

    @Test func aPathInAMissingDirectoryGivesAClearError() throws {
        let directory = try TemporaryDirectory()
        let path = directory.file("no/such/dir/devices.sqlite")
        #expect {
            _ = try SQLiteDeviceStore(path: path)
        } throws: { error in
            guard case .cannotOpen(let reportedPath, _)? = error as? DeviceStoreError else { return false }
            return reportedPath == path && "\(error)".contains(path)
        }
    }

    @Test func concurrentRegistrationsAllLand() async throws {
        let directory = try TemporaryDirectory()
        let store = try SQLiteDeviceStore(path: directory.file("devices.sqlite"))
        await withTaskGroup(of: Void.self) { group in
            for index in 0..<50 {
                group.addTask {
                    try? store.register(Device(userID: "user\(index % 5)", platform: .android, token: "token-\(index)"))
                }
            }
        }
        #expect(try store.allDevices().count == 50)
        #expect(try store.devices(of: "user3").count == 10)
    }
}

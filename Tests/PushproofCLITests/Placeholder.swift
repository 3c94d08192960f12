import Testing

// Replaced by the module's real tests.
@Test func PushproofCLITestsBuilds() { #expect(Bool(true)) }

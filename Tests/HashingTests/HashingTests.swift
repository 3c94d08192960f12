import Hashing
import Testing

@Suite struct HashingTests {
    /// The reference outputs of SplitMix64 from seed 0 (the authors' C reference, as the PRNG
    /// test suites list them): a change of constants or order fails here.
    @Test func splitMixGivesTheReferenceSequence() {
        var generator = SplitMix64(seed: 0)
        let first = (0..<3).map { _ in generator.next() }
        #expect(first == [0xE220_A839_7B1D_CDAF, 0x6E78_9E6A_A1B9_65F4, 0x06C4_5D18_8009_454F])
        #expect(SplitMix64.mix(0) == first[0], "mix is the step from a state")
    }

    /// FNV-1a 64 test vectors (draft-eastlake-fnv): "" and "a" and "foobar".
    @Test func fnvGivesTheReferenceHashes() {
        #expect(FNV1a.hash64("".utf8) == 0xCBF2_9CE4_8422_2325)
        #expect(FNV1a.hash64("a".utf8) == 0xAF63_DC4C_8601_EC8C)
        #expect(FNV1a.hash64("foobar".utf8) == 0x8594_4171_F739_67E8)
    }

    @Test func drawsStayInTheirRanges() {
        var generator = SplitMix64(seed: 7)
        for _ in 0..<1000 {
            #expect((0..<10).contains(generator.next(below: 10)))
            #expect((0.0..<1.0).contains(generator.unit()))
        }
        #expect(generator.next(below: 0) == 0)
    }
}

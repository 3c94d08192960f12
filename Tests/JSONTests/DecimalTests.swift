import JSON
import Testing

@Suite struct DecimalTests {
    @Test(arguments: [UInt64(0), 7, 9, 10, 99, 100, 1_234_567_890, UInt64(Int64.max), UInt64.max])
    func appendsWhatStringSays(_ value: UInt64) {
        var out: [UInt8] = Array("x".utf8)
        appendDecimal(value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x" + String(value))
    }

    @Test func theWriterSignsNegativeIntegersAndTakesTheWholeUnsignedRange() {
        var writer = JSONWriter()
        writer.beginArray()
        writer.int(-1_234)
        writer.int(Int.min)
        writer.int(0)
        writer.uint(UInt64.max)
        writer.endArray()
        #expect(String(decoding: writer.bytes, as: UTF8.self) == "[-1234,\(Int.min),0,\(UInt64.max)]")
    }
}

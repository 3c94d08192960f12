import JSON
import Testing

@Suite struct DecimalTests {
    @Test(arguments: [UInt64(0), 7, 9, 10, 99, 100, 1_234_567_890, UInt64(Int64.max), UInt64.max])
    func appendsWhatStringSays(_ value: UInt64) {
        var out: [UInt8] = Array("x".utf8)
        appendDecimal(value, to: &out)
        #expect(String(decoding: out, as: UTF8.self) == "x" + String(value))
    }

    /// Every power of ten and its neighbours (each digit count's edges): the count returned and
    /// the digits written, nothing past them.
    @Test func writesEveryDigitCountAndReturnsIt() {
        var values: [UInt64] = [0, UInt64.max]
        var power: UInt64 = 1
        for _ in 0..<19 {
            values += [power - 1, power, power + 1]
            power *= 10
        }
        for value in values {
            var buffer = [UInt8](repeating: UInt8(ascii: "#"), count: maxDecimalDigits + 1)
            let count = buffer.withUnsafeMutableBufferPointer { writeDecimal(value, to: $0.baseAddress!) }
            #expect(String(decoding: buffer[..<count], as: UTF8.self) == String(value))
            #expect(buffer[count...].allSatisfy { $0 == UInt8(ascii: "#") })
        }
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

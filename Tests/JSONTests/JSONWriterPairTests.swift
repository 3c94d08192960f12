import JSON
import Testing

/// `JSONWriter.stringPair` writes what `beginArray`, `string`, `string`, `endArray` write, in one
/// append when it can and through them when a string needs escaping or the pair is long.
@Suite struct JSONWriterPairTests {
    @Test(arguments: [
        ("apns-id", "5b1e0c52-7c1f-4d5e-9a1b-2c3d4e5f6a7b"), ("", ""), ("a", ""), ("", "b"), ("q\"", "x"), ("x", "back\\slash"),
        ("line", "a\nb"), ("é", "ü ✓"), ("control", "\u{01}\u{7F}"), (String(repeating: "n", count: 200), String(repeating: "v", count: 100)),
    ])
    func aPairIsWhatTheFourWritesGive(_ pair: (String, String)) {
        var one = JSONWriter()
        one.beginArray()
        one.stringPair(pair.0, pair.1)
        one.stringPair(pair.1, pair.0)
        one.endArray()
        var four = JSONWriter()
        four.beginArray()
        for (first, second) in [(pair.0, pair.1), (pair.1, pair.0)] {
            four.beginArray()
            four.string(first)
            four.string(second)
            four.endArray()
        }
        four.endArray()
        #expect(one.bytes == four.bytes)
    }

    /// A piece continues the document: a key at its end takes the value without a comma, a
    /// value at its end puts one before the next member.
    @Test func aPieceLeavesTheCommasAsTheWritesWould() {
        var w = JSONWriter()
        w.beginObject()
        w.key("a"); w.int(1)
        w.append(piece: Array(#","b":"#.utf8), endsWithKey: true)
        w.int(2)
        w.append(piece: Array(#","c":3"#.utf8), endsWithKey: false)
        w.key("d"); w.null()
        w.endObject()
        #expect(String(decoding: w.bytes, as: UTF8.self) == #"{"a":1,"b":2,"c":3,"d":null}"#)
    }
}

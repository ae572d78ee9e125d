import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Seeded random and mutated inputs for every parser that sees bytes from a server, a journal on
/// disk or the command line. Properties: no crash, no hang, garbage gives `nil` or a clear error,
/// valid input round-trips.
///
/// Deterministic: each case draws from ``SplitMix64`` seeded with the run's seed and the case
/// number, so a failure message's seed and case reproduce it exactly. Set
/// `RANGEFETCH_FUZZ_SEED=<n>` to explore other inputs (and to replay a reported seed).
struct ParserFuzzTests {
    // MARK: Server response heads

    @Test func responseHeadSurvivesMutatedLinesAndStaysWithinLimits() {
        Fuzz.run("ResponseHead", cases: 1_500) { random in
            var head = ResponseHead()
            var fed: [String] = []
            for _ in 0..<random.below(24) {
                let line = random.mutated(random.pick(Corpus.headerLines), corpus: Corpus.headerLines)
                fed.append(line)
                head.consume(line: line)
            }
            return Fuzz.check(head: head, fed: fed)
        }
    }

    @Test func responseHeadRefusesTooManyLinesOrBytes() {
        var lines = ResponseHead()
        lines.consume(line: "HTTP/1.1 200 OK\r\n")
        for index in 0..<(ResponseLimits.maximumHeadLines + 5) { lines.consume(line: "X-Filler-\(index): v\r\n") }
        #expect(lines.exceededLimits && lines.fields.isEmpty)
        #expect(lines.malformation(url: "http://h/f")?.message.contains("http://h/f") == true)
        let readOn = lines.consume(line: "HTTP/1.1 200 OK\r\n")
        #expect(!readOn && lines.exceededLimits, "refusal is sticky")

        var bytes = ResponseHead()
        bytes.consume(line: "HTTP/1.1 200 OK\r\n")
        let wide = "X-Wide: " + String(repeating: "w", count: 64 << 10) + "\r\n"
        var accepted = 0
        while bytes.consume(line: wide) { accepted += 1 }
        #expect(accepted == 4, "300 KiB hold four 64 KiB lines")
        #expect(bytes.exceededLimits)
    }

    @Test func responseHeadKeepsEveryWellFormedField() {
        Fuzz.run("ResponseHead round trip", cases: 1_000) { random in
            var head = ResponseHead()
            let status = 100 + random.below(500)
            head.consume(line: "HTTP/1.1 \(status) Reason\r\n")
            var expected: [String: String] = [:]
            for _ in 0..<random.below(12) {
                let name = random.token(maximumLength: 12, from: Corpus.tokenCharacters)
                let value = random.fieldValue()
                head.consume(line: "\(random.bool() ? name.uppercased() : name): \(value)\r\n")
                let key = name.lowercased()
                expected[key] = expected[key].map { $0 + ", " + value } ?? value
            }
            head.consume(line: "\r\n")
            if head.status != status { return "status \(head.status) != \(status)" }
            if !head.isComplete { return "blank line did not complete the head" }
            if head.fields != expected { return "fields \(head.fields) != \(expected)" }
            return nil
        }
    }

    @Test func contentLengthIsADecimalByteCountOrRefused() {
        Fuzz.run("Content-Length", cases: 3_000) { random in
            let value = random.bool(oneIn: 3) ? String(random.number()) : random.mutated(random.pick(Corpus.numbers), corpus: Corpus.numbers)
            var head = ResponseHead()
            head.consume(line: "HTTP/1.1 200 OK\r\n")
            head.consume(line: "Content-Length: \(value)\r\n")
            guard let sent = head["content-length"] else { return "Content-Length: \(value.debugDescription) was not kept" }
            switch (head.contentLength, head.invalidContentLength) {
            case (let length?, nil):
                let items = sent.split(separator: ",", omittingEmptySubsequences: false)
                guard length >= 0, length <= ResponseLimits.maximumContentLength,
                      items.allSatisfy({ Int64($0.trimmingCharacters()) == length }) else {
                    return "accepted \(length) from '\(sent)'"
                }
            case (nil, let invalid?):
                guard invalid == sent, head.malformation(url: "u") != nil else { return "refused '\(sent)' without saying so" }
            default:
                return "'\(sent)' was accepted and refused, or neither"
            }
            return nil
        }
    }

    // MARK: Content-Range

    @Test func contentRangeAcceptsOnlyConsistentRanges() {
        Fuzz.run("Content-Range garbage", cases: 3_000) { random in
            let header = random.mutated(random.pick(Corpus.contentRanges), corpus: Corpus.contentRanges)
            guard let parsed = ContentRange(header: header) else { return nil }
            if let total = parsed.completeLength, total < 0 || total > ResponseLimits.maximumContentLength {
                return "complete length \(total) from '\(header)'"
            }
            guard let range = parsed.range else {
                return parsed.completeLength == nil ? "'\(header)' parsed as */*" : nil
            }
            if range.isEmpty || range.lower < 0 { return "range \(range) from '\(header)'" }
            if let total = parsed.completeLength, range.upper > total { return "range \(range) beyond \(total) from '\(header)'" }
            return nil
        }
    }

    @Test func contentRangeRoundTrips() {
        Fuzz.run("Content-Range round trip", cases: 2_000) { random in
            let total = random.number() % ResponseLimits.maximumContentLength + 1
            let first = random.number() % total
            let last = first + random.number() % (total - first)
            let known = random.bool()
            let text = "\(random.bool() ? "bytes" : "BYTES") \(first)-\(last)/\(known ? String(total) : "*")"
            let expected = ContentRange(range: ByteRange(first, last + 1), completeLength: known ? total : nil)
            return ContentRange(header: text) == expected ? nil : "'\(text)' parsed as \(String(describing: ContentRange(header: text)))"
        }
    }

    // MARK: File names

    @Test func fileNamesFromHostileDispositionsAreAlwaysSafe() {
        Fuzz.run("Content-Disposition", cases: 3_000) { random in
            let header = random.mutated(random.pick(Corpus.dispositions), corpus: Corpus.dispositions)
            let raw = FileName.fromContentDisposition(header) ?? random.mutated(random.pick(Corpus.names), corpus: Corpus.names)
            let name = FileName.sanitize(raw)
            if name.isEmpty || name == "." || name == ".." { return "'\(raw)' sanitised to '\(name)'" }
            if name.contains("/") || name.contains("\\") { return "'\(raw)' sanitised to '\(name)' with a separator" }
            if name.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) {
                return "'\(raw.debugDescription)' sanitised to '\(name.debugDescription)' with a control character"
            }
            if name.utf8.count > FileName.maximumBytes { return "'\(raw)' sanitised to \(name.utf8.count) bytes" }
            if name.hasPrefix(".") { return "'\(raw)' sanitised to the hidden name '\(name)'" }
            return nil
        }
    }

    @Test func dispositionFileNamesRoundTrip() {
        Fuzz.run("Content-Disposition round trip", cases: 1_500) { random in
            let name = random.token(maximumLength: 30, from: Corpus.nameCharacters)
            let plain = "attachment; filename=\"\(name)\""
            if FileName.fromContentDisposition(plain) != name { return "\(plain) gave \(FileName.fromContentDisposition(plain) ?? "nil")" }
            let encoded = name.utf8.map { String(format: "%%%02X", $0) }.joined()
            let extended = "attachment; filename=\"fallback.bin\"; filename*=UTF-8''\(encoded)"
            if FileName.fromContentDisposition(extended) != name { return "\(extended) gave \(FileName.fromContentDisposition(extended) ?? "nil")" }
            return nil
        }
    }

    // MARK: Advertised digests

    @Test func advertisedDigestsAreWellFormedOrAbsent() {
        Fuzz.run("digest headers", cases: 3_000) { random in
            var head = ResponseHead()
            head.consume(line: "HTTP/1.1 200 OK\r\n")
            let name = random.pick(["Repr-Digest", "Digest", "Content-MD5", "x-amz-checksum-crc32c", "x-amz-checksum-crc64nvme",
                                    "x-amz-checksum-sha256"])
            head.consume(line: "\(name): \(random.mutated(random.pick(Corpus.digestValues), corpus: Corpus.digestValues))\r\n")
            for digest in AdvertisedDigestParser.parse(head) {
                guard digest.hex.count == digest.algorithm.byteCount * 2,
                      digest.hex.allSatisfy({ "0123456789abcdef".contains($0) }),
                      DigestValue(algorithm: digest.algorithm, hex: digest.hex) != nil else {
                    return "\(name): \(head[name.lowercased()] ?? "") gave \(digest)"
                }
            }
            return nil
        }
    }

    @Test func advertisedDigestsRoundTrip() {
        Fuzz.run("digest round trip", cases: 1_500) { random in
            let algorithm = random.pick([DigestAlgorithm.sha256, .sha512, .md5])
            let bytes = (0..<algorithm.byteCount).map { _ in UInt8.random(in: 0...255, using: &random) }
            let base64 = Data(bytes).base64EncodedString()
            let label = random.pick(algorithm == .md5 ? ["md5", "MD5"] : algorithm == .sha256 ? ["sha-256", "SHA-256"] : ["sha-512"])
            var head = ResponseHead()
            head.consume(line: "HTTP/1.1 200 OK\r\n")
            head.consume(line: "Repr-Digest: \(label)=:\(base64):\r\n")
            let expected = DigestValue(algorithm: algorithm, bytes: bytes).hex
            let parsed = AdvertisedDigestParser.parse(head)
            return parsed.map(\.hex) == [expected] ? nil : "\(label)=:\(base64): gave \(parsed)"
        }
    }

    @Test func base64AgreesWithFoundation() {
        Fuzz.run("Base64", cases: 3_000) { random in
            if random.bool() {
                let bytes = (0..<random.below(70)).map { _ in UInt8.random(in: 0...255, using: &random) }
                let text = Data(bytes).base64EncodedString()
                return Base64.decode(text) == bytes ? nil : "'\(text)' did not round-trip"
            }
            let text = random.mutated(random.pick(Corpus.digestValues), corpus: Corpus.digestValues)
            _ = Base64.decode(text)
            return nil
        }
    }

    // MARK: The journal

    @Test func journalRoundTripsRandomRecords() throws {
        Fuzz.run("journal round trip", cases: 400) { random in
            let record = random.journalRecord()
            do {
                let decoded = try JournalCodec.decode(JournalCodec.encode(record))
                return decoded == record ? nil : "decoded \(decoded) != \(record)"
            } catch {
                return "valid record refused: \(error)"
            }
        }
    }

    @Test func journalRefusesTornFlippedAndForeignBytes() {
        Fuzz.run("journal bytes", cases: 800) { random in
            let encoded = JournalCodec.encode(random.journalRecord())
            let mutated: [UInt8]
            switch random.below(3) {
            case 0: mutated = Array(encoded.prefix(random.below(encoded.count)))
            case 1: mutated = random.mutatedBytes(encoded)
            default: mutated = (0..<random.below(300)).map { _ in UInt8.random(in: 0...255, using: &random) }
            }
            return Fuzz.checkJournal(mutated, unchanged: mutated == encoded)
        }
    }

    @Test func journalWithAValidChecksumOverAGarbageBodyIsRefusedCleanly() {
        // Past the checksum: the JSON decoder and the coverage checks see hostile values.
        Fuzz.run("journal body", cases: 1_500) { random in
            let encoded = JournalCodec.encode(random.journalRecord())
            let newline = encoded.firstIndex(of: UInt8(ascii: "\n")) ?? 0
            var body = String(decoding: encoded[(newline + 1)...], as: UTF8.self)
            for _ in 0..<(1 + random.below(3)) { body = random.mutatedNumbers(body) }
            if random.bool(oneIn: 3) { body = random.mutated(body, corpus: Corpus.numbers) }
            return Fuzz.checkJournal(Fuzz.checksummed(Array(body.utf8)), unchanged: false)
        }
    }

    // MARK: Retry-After and checksums

    @Test func retryAfterIsAWholeNonNegativeNumberOrNothing() {
        Fuzz.run("Retry-After", cases: 3_000) { random in
            let value = random.mutated(random.pick(Corpus.numbers + ["Wed, 21 Oct 2015 07:28:00 GMT"]), corpus: Corpus.numbers)
            if let seconds = RetryPolicy.retryAfterSeconds(value) {
                guard seconds >= 0, seconds.isFinite, seconds == seconds.rounded() else { return "'\(value)' gave \(seconds)" }
            }
            let whole = random.below(1_000_000_000)
            return RetryPolicy.retryAfterSeconds(" \(whole)\r\n") == Double(whole) ? nil : "\(whole) did not round-trip"
        }
    }

    @Test func checksumSpecsRoundTripAndGarbageIsAUsageError() {
        Fuzz.run("checksum spec", cases: 3_000) { random in
            let algorithm = random.pick(DigestAlgorithm.allCases)
            let bytes = (0..<algorithm.byteCount).map { _ in UInt8.random(in: 0...255, using: &random) }
            let value = DigestValue(algorithm: algorithm, bytes: bytes)
            let spelling = random.pick([algorithm.rawValue, algorithm.rawValue.uppercased(),
                                        algorithm.rawValue.replacingOccurrences(of: "sha", with: "SHA-")])
            let hex = random.bool() ? value.hex.uppercased() : value.hex
            let valid = "\(spelling)=\(hex)"
            guard (try? ChecksumSpec.parse(valid)) == value else { return "'\(valid)' did not round-trip" }
            let garbage = random.mutated(valid, corpus: Corpus.numbers)
            do {
                let parsed = try ChecksumSpec.parse(garbage)
                if parsed.hex.count != parsed.algorithm.byteCount * 2 { return "'\(garbage)' gave \(parsed)" }
            } catch let error as DownloadError {
                if error.category != .usage || error.message.isEmpty { return "'\(garbage)' threw \(error)" }
            } catch {
                return "'\(garbage)' threw \(error)"
            }
            let listing = random.mutated("\(value.hex)  file.iso\n\(value.hex) *other.bin\n# comment", corpus: Corpus.names)
            do {
                _ = try ChecksumSpec.entry(in: listing, forFileNamed: random.pick(["file.iso", "other.bin", "x"]))
            } catch let error as DownloadError {
                if error.category != .usage { return "checksum file threw \(error)" }
            } catch {
                return "checksum file threw \(error)"
            }
            return nil
        }
    }
}

// MARK: - The harness

/// SplitMix64 (Steele, Lea, Flood 2014): tiny, fast, and the same sequence on every platform.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A number in `0..<bound` (0 when `bound` is not positive).
    mutating func below(_ bound: Int) -> Int { bound > 0 ? Int.random(in: 0..<bound, using: &self) : 0 }
    mutating func bool() -> Bool { next() & 1 == 0 }
    mutating func bool(oneIn odds: Int) -> Bool { below(odds) == 0 }
    mutating func pick<T>(_ choices: [T]) -> T { choices[below(choices.count)] }

    /// A non-negative Int64 with every magnitude equally likely (small, medium and near the top).
    mutating func number() -> Int64 {
        Int64(bitPattern: next() >> 1) >> Int64(below(63))
    }

    mutating func token(maximumLength: Int, from alphabet: [Character]) -> String {
        String((0..<(1 + below(maximumLength))).map { _ in pick(alphabet) })
    }

    /// A header field value: visible ASCII and spaces, never starting or ending with a space.
    mutating func fieldValue() -> String {
        let inner = String((0..<below(20)).map { _ in Character(UnicodeScalar(UInt8(0x20 + below(0x5F)))) })
        return "v" + inner + "v"
    }

    /// `text` after one to four random edits: flips, inserts of interesting characters or
    /// numbers, deletions, duplications, and splices with another corpus entry.
    mutating func mutated(_ text: String, corpus: [String]) -> String {
        var bytes = Array(text.utf8)
        for _ in 0..<(1 + below(4)) {
            switch below(7) {
            case 0 where !bytes.isEmpty: bytes[below(bytes.count)] ^= UInt8(1 << below(8))
            case 1: bytes.insert(contentsOf: Array(pick(Corpus.interesting).utf8), at: below(bytes.count + 1))
            case 2 where !bytes.isEmpty:
                let start = below(bytes.count)
                bytes.removeSubrange(start..<min(bytes.count, start + 1 + below(8)))
            case 3 where !bytes.isEmpty:
                let start = below(bytes.count)
                let piece = bytes[start..<min(bytes.count, start + 1 + below(16))]
                bytes.insert(contentsOf: Array(piece), at: below(bytes.count + 1))
            case 4:
                let other = Array(pick(corpus).utf8)
                bytes = Array(bytes.prefix(below(bytes.count + 1))) + other.suffix(below(other.count + 1))
            case 5: bytes.insert(contentsOf: Array(pick(Corpus.numbers).utf8), at: below(bytes.count + 1))
            default: bytes.insert(UInt8(truncatingIfNeeded: next()), at: below(bytes.count + 1))
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    mutating func mutatedBytes(_ bytes: [UInt8]) -> [UInt8] {
        var result = bytes
        for _ in 0..<(1 + below(3)) where !result.isEmpty {
            switch below(3) {
            case 0: result[below(result.count)] ^= UInt8(1 << below(8))
            case 1: result.remove(at: below(result.count))
            default: result.insert(UInt8(truncatingIfNeeded: next()), at: below(result.count + 1))
            }
        }
        return result
    }

    /// `text` with one run of digits replaced by an interesting number.
    mutating func mutatedNumbers(_ text: String) -> String {
        var characters = Array(text)
        let digitStarts = characters.indices.filter { characters[$0].isNumber && ($0 == 0 || !characters[$0 - 1].isNumber) }
        guard !digitStarts.isEmpty else { return text }
        let start = pick(digitStarts)
        var end = start
        while end < characters.count && characters[end].isNumber { end += 1 }
        characters.replaceSubrange(start..<end, with: Array(pick(Corpus.numbers)))
        return String(characters)
    }

    /// A valid journal record: random size, a random split into segments, random progress.
    mutating func journalRecord() -> JournalRecord {
        let size = bool(oneIn: 8) ? 0 : number() % (1 << 50) + 1
        var cuts = Set((0..<below(6)).map { _ in size > 1 ? 1 + number() % (size - 1) : 0 }.filter { $0 > 0 })
        cuts.insert(0)
        let bounds = cuts.sorted() + [size]
        var segments: [SegmentState] = []
        for index in 0..<(bounds.count - 1) where bounds[index] < bounds[index + 1] || size == 0 {
            let range = ByteRange(bounds[index], bounds[index + 1])
            segments.append(SegmentState(range: range, written: range.count == 0 ? 0 : number() % (range.count + 1)))
        }
        if size == 0 { segments = [] }
        // Block CRCs for some segments, at most as many as their written bytes hold.
        let grid = BlockGrid(fileSize: size)
        for index in segments.indices where bool() {
            let most = min(8, grid.blockCount(written: segments[index].written, of: segments[index].range))
            segments[index].blocks = (0..<below(most + 1)).map { _ in UInt32(truncatingIfNeeded: number()) }
        }
        let remote = RemoteFile(url: "http://127.0.0.1/" + token(maximumLength: 10, from: Corpus.nameCharacters),
                                size: size, acceptsRanges: true,
                                etag: bool() ? "\"\(number())\"" : nil, lastModified: bool() ? "Sun, 22 Nov 2026 10:00:00 GMT" : nil,
                                suggestedName: "f", advertisedDigests: [])
        return JournalRecord(file: remote.identity, size: size, segments: segments)
    }
}

/// Runs fuzz cases and records the first failure with everything needed to replay it.
enum Fuzz {
    /// `RANGEFETCH_FUZZ_SEED` when set, else a fixed seed (reproducible runs).
    static let seed: UInt64 = ProcessInfo.processInfo.environment["RANGEFETCH_FUZZ_SEED"].flatMap { UInt64($0) }
        ?? 0x5EED_0F_2A6E_FE7C

    /// Runs `cases` cases; each returns `nil` when its property holds, else a description.
    static func run(_ name: String, cases: Int, sourceLocation: SourceLocation = #_sourceLocation,
                    _ body: (inout SplitMix64) -> String?) {
        for index in 0..<cases {
            var random = SplitMix64(seed: seed &+ UInt64(index) &* 0x2545_F491_4F6C_DD1D)
            if let failure = body(&random) {
                Issue.record("\(name): case \(index) of seed \(seed) (rerun with RANGEFETCH_FUZZ_SEED=\(seed)): \(failure)",
                             sourceLocation: sourceLocation)
                return
            }
        }
    }

    static func check(head: ResponseHead, fed: [String]) -> String? {
        let context = { "after \(fed.map(\.debugDescription))" }
        if head.status != 0 && !(100...999).contains(head.status) { return "status \(head.status) \(context())" }
        if head.headBytes > ResponseLimits.maximumHeadBytes || head.headLines > ResponseLimits.maximumHeadLines {
            return "head kept \(head.headBytes) bytes in \(head.headLines) lines \(context())"
        }
        if head.fields.keys.contains(where: { $0 != $0.lowercased() || $0.contains(":") }) { return "field names \(head.fields.keys) \(context())" }
        if let length = head.contentLength, length < 0 || length > ResponseLimits.maximumContentLength {
            return "Content-Length \(length) \(context())"
        }
        if (head.contentLength != nil) == (head.invalidContentLength != nil) && head["content-length"] != nil {
            return "Content-Length '\(head["content-length"] ?? "")' neither accepted nor refused \(context())"
        }
        if head.contentEncoding == "identity" || head.contentEncoding == "" { return "identity counted as a coding \(context())" }
        _ = head.contentRange
        _ = AdvertisedDigestParser.parse(head)
        _ = head["content-disposition"].flatMap(FileName.fromContentDisposition).map(FileName.sanitize)
        _ = RetryPolicy.retryAfterSeconds(head["retry-after"])
        return nil
    }

    /// Decoding `bytes` must throw a ``JournalCodec/DecodeError`` or give a record whose
    /// segments cover its size exactly with `written` inside each segment.
    static func checkJournal(_ bytes: [UInt8], unchanged: Bool) -> String? {
        do {
            let record = try JournalCodec.decode(bytes)
            guard record.size >= 0, record.segments.coversExactly(size: record.size),
                  record.segments.allSatisfy({ $0.range.lower <= $0.range.upper && $0.written >= 0 && $0.written <= $0.range.count }),
                  record.segments.allSatisfy({ ($0.blocks?.count ?? 0) <= (record.blockGrid?.blockCount(written: $0.written, of: $0.range) ?? 0) }) else {
                return "accepted an inconsistent record \(record)"
            }
            return nil
        } catch {
            return unchanged ? "refused an untouched journal: \(error)" : nil
        }
    }

    /// `body` behind a correct header line, so only the body's content can be refused.
    static func checksummed(_ body: [UInt8]) -> [UInt8] {
        let digest = Digest(.sha256)
        digest.update(body)
        return Array("rangefetch-journal \(JournalRecord.currentVersion) sha256:\(digest.finalize().hex)\n".utf8) + body
    }
}

/// Seed inputs the mutator starts from: real-world shapes and known trouble.
enum Corpus {
    static let headerLines = [
        "HTTP/1.1 200 OK\r\n", "HTTP/1.1 206 Partial Content\r\n", "HTTP/2 302\r\n", "HTTP/1.0 99999999999 X\r\n",
        "HTTP/1.1 -200 Minus\r\n", "HTTP/\r\n", "Content-Length: 12345\r\n", "Content-Length: -5\r\n",
        "content-length: 99999999999999999999\r\n", "Content-Length: 5, 5\r\n", "Content-Range: bytes 0-9/100\r\n",
        "Content-Encoding: gzip\r\n", "Content-Encoding:  IDENTITY \r\n", "ETag: \"abc\"\r\n", "Retry-After: 120\r\n",
        "Content-Disposition: attachment; filename=\"a.bin\"\r\n", "Repr-Digest: sha-256=:AAAA:\r\n", ": no name\r\n",
        "no colon at all\r\n", "\r\n", "\n", "X-Unicode: caf\u{E9} \u{1F600}\r\n", "X-Fold:\r\n \tcontinued\r\n",
    ]
    static let contentRanges = [
        "bytes 0-9/100", "bytes */100", "bytes 0-9/*", "bytes 5-4/100", "bytes 0-100/100", "bytes -1-9/100",
        "bytes 0-9223372036854775806/9223372036854775807", "bytes 0-0/1", "items 0-9/100", "bytes 0-9/100/7",
        "bytes  0 - 9 / 100", "bytes 9223372036854775807-9223372036854775807/*", "bytes */*", "bytes 1-2-3/4",
    ]
    static let dispositions = [
        "attachment; filename=\"a b.zip\"", "attachment; filename=plain.txt", "inline",
        "attachment; filename=\"x.bin\"; filename*=UTF-8''na%C3%AFve.bin", "attachment; filename=\"../../etc/passwd\"",
        "attachment; filename*=UTF-8''%2e%2e%2f%2e%2e%2fevil", "attachment; filename=\"a\\\"b\\\\c\"",
        "attachment; filename=\"semi;colon.txt\"", "attachment; filename*=''%", "attachment; filename=\"\u{0}\"",
        "attachment; filename=..", "attachment; filename*=UTF-8''%00%2F%5C", "attachment; filename=\"C:\\\\Windows\\\\x\"",
    ]
    static let names = ["report.pdf", "../../etc/passwd", "..", ".", "", "/", "a/b\\c.txt", "evil\u{0}name\n.bin",
                        "  spaced.txt ", String(repeating: "\u{E9}", count: 200), "\u{7F}\u{1B}[31m"]
    static let digestValues = [
        "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:", "SHA-256=47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=",
        "md5=:1B2M2Y8AsgTpgAmY7PhCfg==:", "1B2M2Y8AsgTpgAmY7PhCfg==", "sha-512=:z4PhNX7vuL3xVChQ1m2AB9Yg5AULVxXcg/SpIdNs6c5H0NE8XYXysP+DGNKHfuwvY7kxvUdBeoGlODJ6+SfaPg==:",
        "sha-256=:A:", "sha-256=::", "unknown=:AAAA:", "sha-256=:====:, md5=:x:", "sha-256=:AAAAA:",
        "4waSgw==", "4waSgw==-2", "rosUhgp5mIg=", "47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=-10000", "-", "AAAA--1",
    ]
    static let numbers = ["0", "-1", "-5", "1", "+5", "007", "9223372036854775807", "9223372036854775808",
                          "4611686018427387904", "4611686018427387905", "99999999999999999999", "1e3", "0x10", "١٢٣", " "]
    static let interesting = ["/", "\\", "..", "\0", "\r\n", "\n", " ", "\t", "\"", ";", "=", ",", ":", "-", "*", "%",
                              "%2F", "%00", "%", "'", "\u{FFFD}", "\u{E9}", "\u{1F600}", "\u{202E}", "\u{7F}", "bytes ", "filename*="]
    static let tokenCharacters = Array("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_!#$%&'*+.^`|~")
    static let nameCharacters = Array("abcdefghijklmnopqrstuvwxyz0123456789-_. ()[]\u{E9}\u{FC}\u{4E2D}")
}

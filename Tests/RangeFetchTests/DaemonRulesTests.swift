import Foundation
import Testing
@testable import RangeFetchDaemon

/// The daemon's pure rules as tables: which requests reach the RPC, how a body is parsed, where
/// `dir`/`out` may go, and how aria2c's command line and session files are read.
struct DaemonRulesTests {
    // MARK: RequestGuard

    struct GuardCase: CustomTestStringConvertible, Sendable {
        var host: String?
        var origin: String?
        var secret = true
        var allowAll = false
        var allowed: Bool
        var testDescription: String { "Host \(host ?? "-"), Origin \(origin ?? "-"), secret \(secret), all \(allowAll)" }
    }

    static let guardCases: [GuardCase] = [
        GuardCase(host: "127.0.0.1:6800", origin: nil, allowed: true),
        GuardCase(host: "localhost", origin: nil, allowed: true),
        GuardCase(host: "[::1]:6800", origin: nil, allowed: true),
        GuardCase(host: "127.8.9.1:6800", origin: nil, allowed: true),
        GuardCase(host: nil, origin: nil, allowed: true),
        GuardCase(host: "attacker.example:6800", origin: nil, allowed: false),
        GuardCase(host: "127.0.0.1.attacker.example", origin: nil, allowed: false),
        GuardCase(host: "LOCALHOST:6800", origin: nil, allowed: true),
        GuardCase(host: "localhost", origin: "http://localhost:3000", allowed: true),
        GuardCase(host: "localhost", origin: "http://localhost:3000", secret: false, allowed: false),
        GuardCase(host: "localhost", origin: "null", allowed: true),
        GuardCase(host: "localhost", origin: "null", secret: false, allowed: false),
        GuardCase(host: "localhost", origin: "https://attacker.example", allowed: false),
        GuardCase(host: "localhost", origin: "https://attacker.example", allowAll: true, allowed: true),
        GuardCase(host: "attacker.example", origin: "https://attacker.example", allowAll: true, allowed: false),
        GuardCase(host: "localhost", origin: "http://user@127.0.0.1", allowed: false),
        GuardCase(host: "localhost", origin: "file:///etc", allowed: false),
        GuardCase(host: "127.0.0.1:6800", origin: "http://127.0.0.1:6800", secret: false, allowed: true),
        GuardCase(host: "127.0.0.1:6800", origin: "http://127.0.0.1:6801", secret: false, allowed: false),
    ]

    @Test(arguments: guardCases)
    func hostAndOrigin(_ test: GuardCase) {
        let rule = RequestGuard(secretSet: test.secret, allowOriginAll: test.allowAll)
        let verdict = rule.check(host: test.host, origin: test.origin)
        if test.allowed {
            #expect(verdict == .allowed(corsOrigin: test.origin))
        } else {
            guard case .refused = verdict else { Issue.record("allowed: \(verdict)"); return }
        }
    }

    // MARK: JSON writer

    /// The hand-written writer says what `JSONEncoder` (sorted keys, slashes as they are) says,
    /// and its text reads back as the same value.
    @Test(arguments: [
        JSON.null, .bool(true), .bool(false), .number(0), .number(-7), .number(6800), .number(2.5), .number(-0.125),
        .number(1e300), .number(123_456_789_012_345), .string(""), .string("plain"),
        .string("quote \" backslash \\ slash / tab \t newline \n return \r"),
        .string("bell \u{07} escape \u{1B} form \u{0C} back \u{08} nul \u{00} unit \u{1F} del \u{7F}"),
        .string("é ü 日本 🙂 \u{2028} \u{202E}"), .array([]), .object([:]),
        .array([.number(1), .string("2"), .null, .array([.bool(false)])]),
        .object(["b": .number(1), "a": .object(["z": .string("/x/"), "y": .array([])]), "A": .null, "é": .string("k"), "aa": .bool(true)]),
    ])
    func theWriterSaysWhatJSONEncoderSays(_ value: JSON) throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let expected = String(decoding: try encoder.encode(value), as: UTF8.self)
        #expect(value.text == expected)
        #expect(try JSONDecoder().decode(JSON.self, from: Data(value.bytes)) == value)
    }

    @Test func numbersJSONCannotSayAreNull() {
        #expect(JSON.number(.nan).text == "null")
        #expect(JSON.number(.infinity).text == "null")
        #expect(JSON.array([.number(-.infinity)]).text == "[null]")
    }

    // MARK: RPCMessage and RPCToken

    @Test(arguments: [
        ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":[\"a\"]}", "m", nil as Int?),
        ("{\"jsonrpc\":2.0,\"id\":\"x\",\"method\":\"m\"}", "m", nil),
        ("{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"m\"}", nil, -32600),
        ("{\"jsonrpc\":\"2.0\",\"id\":1}", nil, -32600),
        ("{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\",\"params\":{\"a\":1}}", nil, -32602),
        ("not json", nil, -32700),
        ("[]", nil, -32600),
    ] as [(String, String?, Int?)])
    func aBodyIsParsed(body: String, method: String?, code: Int?) {
        let (elements, _) = RPCMessage.parse(Array(body.utf8))
        switch elements.first {
        case .success(let call)?: #expect(call.method == method && code == nil)
        case .failure(let bad)?: #expect(bad.failure.code == code && method == nil)
        case nil: Issue.record("nothing parsed")
        }
    }

    @Test func aBatchIsParsedElementByElement() {
        let (elements, batch) = RPCMessage.parse(Array("[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\"},5]".utf8))
        #expect(batch && elements.count == 2)
        #expect((try? elements[0].get().method) == "a")
        #expect(throws: (any Error).self) { try elements[1].get() }
    }

    @Test(arguments: [
        ("s", ["token:s", "x"], ["x"] as [String]?),
        ("s", ["token:t", "x"], nil),
        ("s", ["x"], nil),
        ("s", [], nil),
        (nil, ["token:anything", "x"], ["x"]),
        (nil, ["x"], ["x"]),
    ] as [(String?, [String], [String]?)])
    func theToken(secret: String?, params: [String], rest: [String]?) {
        let checked = RPCToken(secret: secret).check(params.map(JSON.string))
        #expect(checked == rest?.map(JSON.string))
    }

    // MARK: DownloadRoot

    @Test(arguments: [
        (nil, nil, "", nil),
        ("sub", nil, "/sub", nil),
        ("sub/../other", "f.bin", "/other", "f.bin"),
        (nil, "deep/f.bin", "/deep", "f.bin"),
        ("/etc", nil, nil, nil),
        ("..", nil, nil, nil),
        ("sub/../..", nil, nil, nil),
        (nil, "../f.bin", nil, nil),
        (nil, "/tmp/f.bin", nil, nil),
        (nil, "sub/..", nil, nil),
    ] as [(String?, String?, String?, String?)])
    func pathsStayUnderTheRoot(dir: String?, out: String?, directory: String?, name: String?) throws {
        let root = try TemporaryDirectory()
        let rule = DownloadRoot(root.path)
        do {
            let place = try rule.place(dir: dir, out: out)
            #expect(place.directory == rule.path + (directory ?? "?"), "\(place)")
            #expect(place.name == name)
        } catch {
            #expect(directory == nil, "\(error)")
        }
    }

    @Test func aLinkInsideTheRootThatLeadsOutIsRefused() throws {
        let root = try TemporaryDirectory(), elsewhere = try TemporaryDirectory()
        try FileManager.default.createSymbolicLink(atPath: root.file("out"), withDestinationPath: elsewhere.path)
        #expect(throws: RPCFailure.self) { try DownloadRoot(root.path).place(dir: "out/new", out: nil) }
        #expect(throws: RPCFailure.self) { try DownloadRoot(root.path).place(dir: nil, out: "out/f.bin") }
    }

    // MARK: aria2c's command line

    @Test func aria2psFixtureLineIsRead() throws {
        let flags = try Aria2Flags.parse([
            "--dir=/tmp/x", "--file-allocation=none", "--quiet", "--enable-rpc=true", "--rpc-listen-port=15123",
            "--conf-path=/conf", "--input-file=/session", "--rpc-secret=abc",
        ]) { path in path == "/conf" ? "# defaults\nmax-download-limit=10000\nmax-concurrent-downloads=2\npause=true\n" : nil }
        #expect(flags.directory == "/tmp/x" && flags.port == 15123 && flags.secret == "abc" && flags.enableRPC)
        #expect(flags.maximumActive == 2 && flags.inputFile == "/session" && flags.confPath == "/conf")
        #expect(flags.defaults == ["max-download-limit": "10000", "pause": "true"])
        #expect(flags.ignored == ["--file-allocation", "--quiet"])
    }

    @Test(arguments: [
        (["-d", "/d", "-j", "3", "-x16", "--enable-rpc"], nil as String?),
        (["--rpc-listen-port", "0"], "--rpc-listen-port must be 1-65535 (got 0)"),
        (["--no-such-flag=1"], "aria2c option --no-such-flag is not known to rangefetch"),
        (["-Z"], "aria2c option -Z is not known to rangefetch"),
        (["--conf-path=/missing"], "--conf-path /missing: cannot be read"),
    ] as [([String], String?)])
    func flagsAreReadOrRefused(arguments: [String], problem: String?) {
        do {
            let flags = try Aria2Flags.parse(arguments) { _ in nil }
            #expect(problem == nil)
            #expect(flags.directory == "/d" && flags.maximumActive == 3 && flags.defaults["max-connection-per-server"] == "16")
        } catch {
            #expect(error.description == problem)
        }
    }

    @Test func aSessionFileIsRead() {
        let entries = Aria2SessionFile.parse("http://a/1\thttp://b/1\n gid=0000000000000001\n pause=true\n# note\nhttp://a/2\n\tout=x.bin\n")
        #expect(entries == [
            Aria2SessionFile.Entry(uris: ["http://a/1", "http://b/1"], options: ["gid": "0000000000000001", "pause": "true"]),
            Aria2SessionFile.Entry(uris: ["http://a/2"], options: ["out": "x.bin"]),
        ])
    }

    // MARK: URIListEdit (changeUri)

    @Test(arguments: [
        (["a", "b"], ["a"], ["c"], nil, ["b", "c"], 1, 1),
        (["a", "a", "b"], ["a"], [], nil, ["a", "b"], 1, 0),
        (["a", "a", "b"], ["a", "a"], [], nil, ["b"], 2, 0),
        (["a", "b"], ["x"], [], nil, ["a", "b"], 0, 0),
        (["a", "b"], [], ["c"], 0, ["c", "a", "b"], 0, 1),
        (["a", "b"], [], ["c", "d"], 1, ["a", "c", "d", "b"], 0, 2),
        (["a", "b"], [], ["c"], 99, ["a", "b", "c"], 0, 1),
        (["a", "b"], [], ["c"], -3, ["c", "a", "b"], 0, 1),
        (["a"], ["a"], ["b"], nil, ["b"], 1, 1),
    ] as [([String], [String], [String], Int?, [String], Int, Int)])
    func changeUriEditsTheListAsAria2(uris: [String], delete: [String], add: [String], position: Int?,
                                      result: [String], deleted: Int, added: Int) throws {
        let edit = try URIListEdit(uris, delete: delete, add: add, position: position)
        #expect(edit.uris == result && edit.deleted == deleted && edit.added == added)
    }

    @Test func changeUriLeavingNoURIIsRefused() {
        #expect(throws: URIListEdit.Refusal.nothingLeft) { try URIListEdit(["a"], delete: ["a"], add: [], position: nil) }
    }
}


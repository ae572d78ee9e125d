import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Through the CLI: the local name is the URL's unless -J trusts the server, a server's name is
/// never hidden, long names are cut to fit, and a list's `dir=` stays inside `-d`.
@Suite(.serialized)
final class ServerNameTests {
    let out: TemporaryDirectory
    let lists: TemporaryDirectory
    let fault: FaultServer

    init() throws {
        out = try TemporaryDirectory("rf-names")
        lists = try TemporaryDirectory("rf-name-lists")
        fault = try FaultServer()
    }

    deinit { fault.stop() }

    private func entries() throws -> [String] {
        // The batch journal (.rangefetch-batch) is not an entry.
        try FileManager.default.contentsOfDirectory(atPath: out.path).filter { !$0.hasPrefix(".") }.sorted()
    }

    @Test func theDefaultNameIsTheURLsEvenWhenTheServerOffersAProfile() throws {
        let url = fault.dataURL(size: 1000, name: "model.bin", "disposition=.profile&redirect=2")
        let result = try runCLI(["-q", "-d", out.path, url])
        #expect(result.status == 0, "\(result.stderr)")
        #expect(try entries() == ["model.bin"])
        try fault.expectFile(out.file("model.bin"), size: 1000, sourceLocation: #_sourceLocation)
    }

    @Test(arguments: ["-J", "--content-disposition"])
    func dashJTakesTheServersNameWithoutItsLeadingDots(flag: String) throws {
        for (offered, saved) in [(".profile", "profile"), ("../..bashrc", "bashrc")] {
            let url = fault.dataURL(size: 1000, name: "model.bin", "disposition=\(offered)&redirect=1")
            let result = try runCLI(["-q", flag, "-d", out.path, url])
            #expect(result.status == 0, "\(result.stderr)")
            try fault.expectFile(out.file(saved), size: 1000, sourceLocation: #_sourceLocation)
        }
        #expect(try entries() == ["bashrc", "profile"])
        #expect(try runCLI([flag, "-o", out.file("x"), fault.dataURL(size: 10)]).status == 2)
    }

    @Test func aThreeHundredByteNameIsCutSoTheDownloadWorksUnderDashD() throws {
        // 100 three-byte characters and ".bin": 304 bytes; NAME.part.rfjournal.tmp must fit 255.
        let name = String(repeating: "日", count: 100) + ".bin"
        let encoded = name.addingPercentEncoding(withAllowedCharacters: .urlPathAllowed) ?? name
        let result = try runCLI(["-q", "-n", "4", "--min-segment", "16K", "-d", out.path,
                                 fault.dataURL(size: 256 << 10, name: encoded)])
        #expect(result.status == 0, "\(result.stderr)")
        let expected = String(repeating: "日", count: 77) + ".bin"
        #expect(try entries() == [expected])
        #expect(expected.utf8.count == 235)
        try fault.expectFile(out.file(expected), size: 256 << 10, sourceLocation: #_sourceLocation)
    }

    static let escapingDirectories: [(line: String, says: String)] = [
        ("  dir=/tmp/elsewhere", "dir= must be a directory inside"),
        ("  dir=../x", "without '..'"),
        ("  dir=a/../../x", "without '..'"),
    ]

    @Test(arguments: escapingDirectories)
    func aListDirectoryOutsideDashDIsRefusedNamingTheLine(_ example: (line: String, says: String)) throws {
        let path = lists.file("escape.txt")
        try [fault.dataURL(size: 10, name: "ok.bin"), fault.dataURL(size: 10, name: "bad.bin"), example.line]
            .joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCLI(["-d", out.path, "-i", path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("escape.txt:3: ") && result.stderr.contains(example.says), "\(result.stderr)")
        // The list streams: line 1's file may be fetched before line 3 is read; the entry the bad
        // line belongs to never is.
        #expect(try fault.stats().log.allSatisfy { $0.path.hasSuffix("/ok.bin") })
        #expect(try entries().allSatisfy { $0 == "ok.bin" })
    }

    @Test func aJSONListDirectoryOutsideDashDIsRefusedNamingTheLine() throws {
        let path = lists.file("escape.jsonl")
        try "{\"url\": \"\(fault.dataURL(size: 10))\", \"dir\": \"/etc\"}\n"
            .write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCLI(["-d", out.path, "-i", path])
        #expect(result.status == 2, "\(result.stderr)")
        #expect(result.stderr.contains("escape.jsonl:1: \"dir\" must be a directory inside"), "\(result.stderr)")
        #expect(try fault.stats().requests == 0)
    }

    @Test func aListDirectoryIsInsideDashD() throws {
        let path = lists.file("good.txt")
        try [fault.dataURL(size: 1000, name: "a.bin"), "  dir=sub", fault.dataURL(size: 2000, name: "b.bin"),
             "  dir=sub/deeper/", "  out=c.bin"].joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
        let result = try runCLI(["-q", "-d", out.path, "-i", path])
        #expect(result.status == 0, "\(result.stderr)")
        try fault.expectFile(out.file("sub/a.bin"), size: 1000, sourceLocation: #_sourceLocation)
        try fault.expectFile(out.file("sub/deeper/c.bin"), size: 2000, sourceLocation: #_sourceLocation)
        #expect(try entries() == ["sub"])
    }
}

import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Which name a download gets: the URL's by default, the server's (made safe) only when asked.
struct NameSourceTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var source: NameSource
        var url: String
        var redirectedTo: String? = nil
        var disposition: String? = nil
        var expected: String
        var testDescription: String { "\(source) \(url) -> \(expected)" }
    }

    static let cases: [Case] = [
        // By default the server is not asked.
        Case(source: .givenURL, url: "http://h/files/model.bin", disposition: "attachment; filename=\".profile\"", expected: "model.bin"),
        Case(source: .givenURL, url: "http://h/x", redirectedTo: "http://cdn/.bashrc", expected: "x"),
        Case(source: .givenURL, url: "http://h/big%20file.iso?sig=1", expected: "big file.iso"),
        Case(source: .givenURL, url: "http://h/dir/", expected: FileName.fallback),
        Case(source: .givenURL, url: "http://h/a/%2e%2e", expected: FileName.fallback),
        Case(source: .givenURL, url: "http://h/a/%2E", expected: FileName.fallback),
        Case(source: .givenURL, url: "http://h/a/..%2Fetc%2Fpasswd", expected: ".._etc_passwd"),
        // An encoded separator is never a path, and a dot spelt in escapes is not the user's.
        Case(source: .givenURL, url: "http://h/innocent%2f.bashrc", expected: "innocent_.bashrc"),
        Case(source: .givenURL, url: "http://h/innocent%5C.bashrc", expected: "innocent_.bashrc"),
        Case(source: .givenURL, url: "http://h/%2E%20.bashrc", expected: "bashrc"),
        Case(source: .givenURL, url: "http://h/a%E2%80%AEcod.exe", expected: "acod.exe"),
        Case(source: .givenURL, url: "http://h/a%C2%85b.bin", expected: "ab.bin"),
        Case(source: .givenURL, url: "http://h/.profile", expected: ".profile"),
        Case(source: .givenURL, url: "http://h/na%C3%AFve%07.bin", expected: "naïve.bin"),
        // -J: Content-Disposition, else the redirect target's segment, else the URL's; made safe.
        Case(source: .server, url: "http://h/files/model.bin", disposition: "attachment; filename=\".profile\"", expected: "profile"),
        Case(source: .server, url: "http://h/m.bin", disposition: "attachment; filename*=UTF-8''%2E%2E%2F.bashrc", expected: "bashrc"),
        Case(source: .server, url: "http://h/get?id=1", redirectedTo: "http://cdn/real.iso", expected: "real.iso"),
        Case(source: .server, url: "http://h/get", redirectedTo: "http://cdn/store/.bashrc", expected: "bashrc"),
        Case(source: .server, url: "http://h/get", redirectedTo: "http://cdn/r.iso", disposition: "attachment; filename=cd.iso", expected: "cd.iso"),
        Case(source: .server, url: "http://h/model.bin", disposition: "attachment; filename=\"..\"", expected: "model.bin"),
        // The rule is a fixed point: stripping a dot then a space cannot leave a dot in front.
        Case(source: .server, url: "http://h/m.bin", disposition: "attachment; filename=\". .bashrc\"", expected: "bashrc"),
        Case(source: .server, url: "http://h/m.bin", disposition: "attachment; filename*=UTF-8''%2E%20.ssh", expected: "ssh"),
        Case(source: .server, url: "http://h/m.bin", disposition: "attachment; filename*=UTF-8''.%C2%A0.%09.profile", expected: "profile"),
        Case(source: .server, url: "http://h/get", redirectedTo: "http://cdn/%2E%20.bash_logout", expected: "bash_logout"),
        Case(source: .server, url: "http://h/m.bin", disposition: "attachment; filename=\"report\u{202E}fdp.exe\"", expected: "reportfdp.exe"),
        Case(source: .server, url: "http://h/m.bin", disposition: "attachment; filename=\". . .\"", expected: "m.bin"),
        Case(source: .server, url: "http://h/model.bin", redirectedTo: "http://cdn/", disposition: "inline", expected: "model.bin"),
        // Without a redirect the last segment is the user's own, hidden name included.
        Case(source: .server, url: "http://h/.profile", expected: ".profile"),
        Case(source: .server, url: "http://h/dir/", expected: FileName.fallback),
    ]

    @Test(arguments: cases)
    func chooseTheName(_ example: Case) {
        let name = example.source.name(url: example.url, redirectedTo: example.redirectedTo,
                                       contentDisposition: example.disposition)
        #expect(name == example.expected)
    }

    @Test func theNameBeforeAnyProbeIsTheGivenURLs() {
        #expect(NameSource.nameFromURL("http://h/a/b.tar.gz") == "b.tar.gz")
        #expect(NameSource.nameFromURL("not a url") == FileName.fallback)
    }
}

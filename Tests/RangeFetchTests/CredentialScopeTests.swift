import Foundation
import Testing
@testable import RangeFetch
@testable import RangeFetchBase
@testable import RangeFetchNetwork

/// Who receives which secret: a table, no sockets.
struct CredentialScopeTests {
    static let netrc = Netrc.parse("""
        machine mirror.example login m password mirrorpw
        default login d password defaultpw
        """)

    @Test(arguments: [
        // (request URL, user secrets?, netrc login)
        ("https://main.example/f.bin", true, "d"),
        ("https://MAIN.example:443/other/path?x=1", true, "d"),
        ("http://main.example/f.bin", false, nil),          // another scheme: another origin
        ("https://main.example:8443/f.bin", false, nil),    // another port
        ("https://cdn.example/signed?sig=1", false, nil),   // a redirect target elsewhere
        ("https://mirror.example/f.bin", false, "m"),       // a mirror: its own netrc entry only
        ("https://u:p@mirror.example/f.bin", false, nil),   // userinfo in the URL wins over netrc
        ("https://u@main.example/f.bin", true, nil),
    ] as [(String, Bool, String?)])
    func secretsGoOnlyToTheOriginTheyWereGivenFor(url: String, secrets: Bool, login: String?) {
        let scope = CredentialScope(origin: URLParts("https://main.example/f.bin")?.origin, netrc: Self.netrc)
        let grant = scope.grant(for: url)
        #expect(grant.userSecrets == secrets)
        #expect(grant.netrcLogin?.login == login)
    }

    @Test func withoutABoundOriginEachRequestIsItsOwnOrigin() {
        let grant = CredentialScope(origin: nil, netrc: Self.netrc).grant(for: "https://elsewhere.example/f")
        #expect(grant.userSecrets && grant.netrcLogin?.login == "d")
    }

    /// The S3 signature and session token, and the user's Authorization and Cookie lines, are
    /// left off a request to another origin; other header lines stay.
    @Test func headerLinesOfARequestToAnotherOriginCarryNoSecrets() throws {
        var options = RequestOptions()
        options.headers = ["Authorization: Bearer t0ken", "Cookie: s=1", "X-Trace: 7"]
        options.s3Signer = SigV4Signer(accessKeyID: "AKIDEXAMPLE", secretAccessKey: "secret", sessionToken: "SESSION",
                                       region: "us-east-1")
        options.netrc = false
        try options.bindSecrets(to: "https://s3.example:9000/bucket/key")
        let own = options.headerLines(url: "https://s3.example:9000/bucket/key", time: 1_700_000_000)
        #expect(own.contains { $0.hasPrefix("Authorization: AWS4-HMAC-SHA256") })
        #expect(own.contains("x-amz-security-token: SESSION"))
        #expect(own.contains("Cookie: s=1") && own.contains("X-Trace: 7"))
        let other = options.headerLines(url: "https://other.example/bucket/key", time: 1_700_000_000)
        #expect(!other.contains { $0.lowercased().hasPrefix("authorization") || $0.lowercased().hasPrefix("cookie")
            || $0.lowercased().hasPrefix("x-amz-") }, "\(other)")
        #expect(other.contains("X-Trace: 7"))
    }
}

struct NetrcTests {
    @Test func parsesMachinesDefaultQuotesAndMacros() {
        let netrc = Netrc.parse("""
            # not a comment in netrc, but harmless
            machine a.example login alice password "pa ss\\"word"
            macdef init
            machine evil.example login x password y

            machine b.example
              login bob
              account ignored
              password pw2
            machine a.example login second password never
            machine nopass.example login n
            default login anon password anonpw
            """)
        #expect(netrc.login(forHost: "A.example") == Netrc.Login(login: "alice", password: "pa ss\"word"))
        #expect(netrc.login(forHost: "b.example") == Netrc.Login(login: "bob", password: "pw2"))
        #expect(netrc.login(forHost: "evil.example") == nil, "a macro's body is not entries")
        #expect(netrc.login(forHost: "nopass.example") == nil)
        #expect(netrc.fallback == Netrc.Login(login: "anon", password: "anonpw"))
    }

    /// What libcurl is given to look hosts up at every hop: complete machine entries only, quoted.
    @Test func theMachineFileHoldsCompleteMachineEntriesOnly() {
        let netrc = Netrc.parse("""
            machine a.example login alice password "p\\"w"
            machine b.example login bob
            machine c.example password onlypw
            default login d password dpw
            """)
        #expect(netrc.machineText == "machine \"a.example\" login \"alice\" password \"p\\\"w\"\n")
        #expect(Netrc.parse(netrc.machineText).login(forHost: "a.example") == Netrc.Login(login: "alice", password: "p\"w"))
    }

    @Test(arguments: [
        (uid_t(0), mode_t(0o600), nil),
        (uid_t(0), mode_t(0o644), nil),
        (uid_t(0), mode_t(0o664), "is writable by its group (mode 664)"),
        (uid_t(0), mode_t(0o646), "is writable by every user (mode 646)"),
        (uid_t(65534), mode_t(0o600), "belongs to another user (uid 65534)"),
    ] as [(uid_t, mode_t, String?)])
    func aFileOthersCouldWriteIsNamed(owner: uid_t, mode: mode_t, problem: String?) {
        #expect(FilePermissions.problem(owner: owner, mode: mode, caller: 0) == problem)
    }

    /// Under umask 002 with user private groups (Debian's default for users) files are 0664:
    /// group-writable by a group of one. That is no one else.
    @Test func aGroupOfOneMayWriteButNotEveryone() {
        #expect(FilePermissions.problem(owner: 1000, mode: 0o664, caller: 1000, groupIsPrivate: true) == nil)
        #expect(FilePermissions.problem(owner: 1000, mode: 0o666, caller: 1000, groupIsPrivate: true) == "is writable by every user (mode 666)")
        #expect(FilePermissions.problem(owner: 1000, mode: 0o664, caller: 1000, groupIsPrivate: false) != nil)
        #expect(!FilePermissions.isPrivateGroup(0, of: 65534), "nobody's primary group is not root's")
    }

    @Test func aNetrcWritableByOthersIsRefused() throws {
        let dir = try TemporaryDirectory("rf-netrc")
        let path = dir.file("netrc")
        try "machine h login u password p\n".write(toFile: path, atomically: true, encoding: .utf8)
        chmod(path, 0o600)
        #expect(try Netrc.load(path: path)?.login(forHost: "h")?.password == "p")
        chmod(path, 0o666)
        #expect(throws: DownloadError.self) { try Netrc.load(path: path) }
        #expect(try Netrc.load(path: dir.file("missing")) == nil)
    }
}

/// The same through the CLI against our fault server: "127.0.0.1" and "localhost" name the same
/// server but are two origins, so the server's log shows which requests carried a secret.
@Suite(.serialized)
final class SecretsStayWithTheirOriginTests {
    let server: FaultServer
    let out: TemporaryDirectory

    init() throws {
        server = try FaultServer()
        out = try TemporaryDirectory("rf-origin")
    }

    deinit { server.stop() }

    private var otherOrigin: String { "http://localhost:\(server.port)" }

    @Test func aMirrorOnAnotherOriginGetsNoCredentialsHeadersOrCookies() throws {
        let size: Int64 = 8 << 20
        let main = server.dataURL(size: size, name: "m.bin", "auth=u:pw12")
        let mirror = otherOrigin + "/data/\(size)/m.bin?rate=4000000"
        let result = try runCLI([main, "-u", "u:pw12", "-H", "Cookie: session=c00kie", "-H", "Authorization: Basic dTpwdzEy",
                                 "--mirror", mirror, "-n", "4", "--min-segment", "1M", "-o", out.file("m.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        try server.expectFile(out.file("m.bin"), size: size, sourceLocation: #_sourceLocation)
        let log = try server.stats().log
        let toMirror = log.filter { $0.host?.hasPrefix("localhost") == true }
        #expect(!toMirror.isEmpty, "the mirror was never asked")
        #expect(toMirror.allSatisfy { $0.auth == false && $0.cookie == false }, "\(toMirror.filter { $0.auth == true || $0.cookie == true }.count) requests to the mirror carried a secret")
        #expect(log.contains { $0.host?.hasPrefix("127.0.0.1") == true && $0.auth == true })
    }

    /// With mirrors given, the main URL's redirect target on another host was sampled with the
    /// user's credentials; it gets none now.
    @Test func aRedirectTargetOnAnotherHostGetsNoCredentialsWhenMirrorsAreSampled() throws {
        let size: Int64 = 4 << 20
        let main = server.dataURL(size: size, name: "r.bin", "redirect=1&redirecthost=1")
        let mirror = server.dataURL(size: size, name: "r.bin", "copy=2")
        let result = try runCLI([main, "-u", "u:pw34", "--mirror", mirror, "-n", "4", "--min-segment", "1M",
                                 "-o", out.file("r.bin")])
        #expect(result.status == 0, "\(result.stderr)")
        let toTarget = try server.stats().log.filter { $0.host?.hasPrefix("localhost") == true }
        #expect(!toTarget.isEmpty)
        #expect(toTarget.allSatisfy { $0.auth == false }, "\(toTarget.filter { $0.auth == true }.map(\.range))")
    }

    /// Every spelling getopt reads as `-u`'s value, combined short flags included.
    static let userForms: [[String]] = [
        ["-u", "alice:hunter2pw"], ["-qu", "alice:hunter2pw"], ["-qualice:hunter2pw"], ["-ualice:hunter2pw"],
        ["-u=alice:hunter2pw"], ["--user", "alice:hunter2pw"], ["--user=alice:hunter2pw"],
    ]

    @Test(arguments: userForms)
    func thePasswordOfDashUIsBlankedInTheProcessArguments(form: [String]) throws {
        let url = server.dataURL(size: 16 << 20, name: "p.bin", "authb64=YWxpY2U6aHVudGVyMnB3&rate=2000000")
        let run = try RunningCLI([url] + form + ["-o", out.file("p.bin")])
        #expect(run.waitUntilReceived(1 << 20), "never got 1 MiB")
        let shown = try String(decoding: Data(contentsOf: URL(fileURLWithPath: "/proc/\(run.pid)/cmdline")), as: UTF8.self)
        run.send(SIGKILL)
        _ = try run.wait()
        #expect(!shown.contains("hunter2pw"), "\(shown)")
        #expect(shown.contains(url))
    }

    @Test func aConfigFileOrNetrcOthersCanWriteIsRefused() throws {
        let config = out.file("config")
        try "insecure\n".write(toFile: config, atomically: true, encoding: .utf8)
        chmod(config, 0o666)
        let url = server.dataURL(size: 1000, name: "c.bin")
        let refused = try runCLI(["--config", config, url, "-o", out.file("c.bin")])
        #expect(refused.status == 2 && refused.stderr.contains("writable by every user"), "\(refused.stderr)")
        let netrc = out.file("netrc")
        try "default login u password p\n".write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o664)
        chown(netrc, 0, 65534) // a group with others in it (nogroup), not the owner's own
        let netrcRefused = try runCLI(["--no-config", "--netrc-file", netrc, url, "-o", out.file("n.bin")])
        #expect(netrcRefused.status == 2 && netrcRefused.stderr.contains("writable by its group"), "\(netrcRefused.stderr)")
        #expect(!FileManager.default.fileExists(atPath: out.file("n.bin")))
    }

    /// A netrc `machine` login reaches each host libcurl's own redirects lead to (as curl
    /// --netrc does: a data host redirecting to its login host); the `default` login does not.
    @Test func netrcMachineLoginsFollowRedirectsButTheDefaultStaysHome() throws {
        let netrc = out.file("netrc-hops")
        try "machine 127.0.0.1 login u password hop1\nmachine localhost login u password hop1\n"
            .write(toFile: netrc, atomically: true, encoding: .utf8)
        chmod(netrc, 0o600)
        let url = server.dataURL(size: 3_000_000, name: "h.bin", "auth=u:hop1&redirect=1&redirecthost=1")
        let hops = try runCLI(["--no-config", "--netrc-file", netrc, url, "-o", out.file("h.bin")])
        #expect(hops.status == 0, "\(hops.stderr)")
        try server.expectFile(out.file("h.bin"), size: 3_000_000, sourceLocation: #_sourceLocation)

        let fallback = out.file("netrc-default")
        try "machine 127.0.0.1 login u password hop2\ndefault login u password hop2\n"
            .write(toFile: fallback, atomically: true, encoding: .utf8)
        chmod(fallback, 0o600)
        let target = server.dataURL(size: 3_000_000, name: "d.bin", "auth=u:hop2&redirect=1&redirecthost=1&run=2")
        let refused = try runCLI(["--no-config", "--netrc-file", fallback, target, "-o", out.file("d.bin"), "--max-tries", "1"])
        #expect(refused.status == 3, "\(refused.stderr)")
        let atTarget = try server.stats().log.filter { $0.host?.hasPrefix("localhost") == true && $0.path.hasSuffix("d.bin") }
        #expect(!atTarget.isEmpty && atTarget.allSatisfy { $0.auth == false }, "the default login went to localhost")
    }

    @Test func turningTLSChecksOffSaysSoOnce() throws {
        let url = server.dataURL(size: 1000, name: "k.bin")
        let result = try runCLI(["--no-config", "-k", url, "-o", out.file("k.bin")])
        #expect(result.status == 0)
        #expect(result.stderr.components(separatedBy: "TLS certificates are not checked").count == 2, "\(result.stderr)")
    }
}

/// Which protocols a redirect may lead to: never from https to plain http while libcurl would
/// look a netrc login up at the new hop.
struct RedirectProtocolTests {
    @Test func anHTTPSURLWithNetrcAtEveryHopStaysOnHTTPS() {
        #expect(RequestOptions.redirectProtocols(url: "https://h/f", netrcAtEveryHop: true) == "https")
        #expect(RequestOptions.redirectProtocols(url: "HTTPS://h/f", netrcAtEveryHop: true) == "https")
        #expect(RequestOptions.redirectProtocols(url: "https://h/f", netrcAtEveryHop: false) == "http,https")
        #expect(RequestOptions.redirectProtocols(url: "http://h/f", netrcAtEveryHop: true) == "http,https")
    }
}

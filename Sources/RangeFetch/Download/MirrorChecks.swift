import RangeFetchBase
import RangeFetchNetwork
import CCurl

/// The checks that let a mirror serve ranges of a download, run as parallel requests on a loop
/// of their own (on a thread beside the download's, started by ``MirrorAgreement``) while the
/// main URL already downloads. Every candidate is checked at once, each on one connection:
///
/// 1. it is asked for the last sampled block (``MirrorAgreement/sampleRanges(size:)``) first:
///    the answer must be a 206 of that block of a file of the main URL's size (this is its
///    probe: size, validators, where it redirects);
/// 2. then for the other blocks, one after another (a mirror that allows one connection per
///    client is not refused by its own check); a mirror whose blocks all match the main URL's
///    (``Setup/references``) agrees, and goes to the ``MirrorFeed``, which the running engine
///    takes it from. The check's connection is closed with its last block: the mirror's
///    connection count at the server is the download's own.
///
/// A check has ``MirrorAgreement/agreementSeconds`` to finish, each request
/// ``MirrorAgreement/mirrorRequestSeconds`` to connect or go without a byte; a mirror left out
/// is named with why. A mirror the engine drops is replaced by the next backup
/// (``MirrorCandidates``), checked the same way. Loop thread only; warnings go through the feed.
final class MirrorChecks: CurlLoopClient {
    struct Setup {
        /// The main URL's probe, and the URL the user gave (for messages).
        var primary: RemoteFile
        var mainURL: String
        var size: Int64
        var samples: [ByteRange]
        /// The main URL's bytes at each of ``samples``.
        var references: [[UInt8]]
        /// Options of the mirrors' requests (short limits).
        var mirror: RequestOptions
        /// A digest proves the mirrors' bytes (no notice that they are only spot-checked).
        var provesMirrors: Bool
    }

    private let setup: Setup
    private var candidates: MirrorCandidates
    private let feed: MirrorFeed
    private let loop: CurlLoop
    private let stop: CancellationFlag

    private struct Request {
        let easy: CurlEasy
        let sink: ResponseSink
        /// The check it belongs to.
        let check: Int
        let sample: Int
    }

    private struct Check {
        let url: String
        let deadline: Double
        /// What its answer to the first block said about it.
        var remote: RemoteFile?
        /// Its request running now, by token.
        var request: Int?
        /// The blocks still to ask for, in order.
        var next: [Int]
    }

    private var requests: [Int: Request] = [:]
    private var nextToken = 0
    private var checks: [Int: Check] = [:]
    private var nextCheck = 0
    /// Mirrors not checked in time, named together once no check is running.
    private var late: [String] = []
    private var saidSpotChecksOnly = false

    init(_ setup: Setup, candidates: MirrorCandidates, feed: MirrorFeed, loop: CurlLoop, stop: CancellationFlag) {
        self.setup = setup
        self.candidates = candidates
        self.feed = feed
        self.loop = loop
        self.stop = stop
        let now = MonotonicTime.now()
        for url in candidates.first { begin(url, now: now) }
    }

    /// Ends every request still running: the checks not finished are named as left out.
    func close() {
        for request in requests.values { loop.remove(request.easy) }
        requests = [:]
        let pending = checks.values.map { Redaction.url($0.url) }.sorted()
        checks = [:]
        sayLate()
        Self.leftOut(pending, why: "not checked before the download ended").map(feed.warn)
    }

    // MARK: Rounds of the loop

    func beforeTransfers(now: Double) throws(DownloadError) {
        for url in feed.takeDropped() {
            if let backup = candidates.replace(dropped: url) { begin(backup, now: now) }
        }
        for (id, check) in checks where now >= check.deadline {
            end(id)
            late.append(Redaction.url(check.url))
        }
    }

    func afterTransfers(finished: [CurlLoop.Finished], now: Double) throws(DownloadError) -> CurlLoop.Next {
        for end in finished {
            guard let request = requests.removeValue(forKey: end.token) else { continue }
            checks[request.check]?.request = nil
            answered(request.check, request, result: end.result)
        }
        if checks.isEmpty { sayLate() }
        // Nothing to check now and nothing to replace later: the thread ends.
        if checks.isEmpty && (candidates.agreed.isEmpty || candidates.backups.isEmpty) { return .done }
        return .wait(milliseconds: requests.isEmpty ? 1000 : 100)
    }

    // MARK: One mirror

    private func begin(_ url: String, now: Double) {
        if SourceAddress.downgradesToPlainHTTP(from: setup.mainURL, to: url) { feed.warn(.plainHTTPMirror(url: Redaction.url(url))) }
        let id = nextCheck
        nextCheck += 1
        // The last block first, then the others in order.
        checks[id] = Check(url: url, deadline: now + MirrorAgreement.agreementSeconds,
                           next: [setup.samples.count - 1] + Array(setup.samples.indices.dropLast()))
        askNext(id)
    }

    /// Asks for the check's next block, or, with none left, lets the mirror in.
    private func askNext(_ id: Int) {
        guard var check = checks[id] else { return }
        guard !check.next.isEmpty else { return agree(id) }
        let sample = check.next.removeFirst()
        checks[id] = check
        let url = check.remote.map { Source(remote: $0).requestURL } ?? check.url
        if !request(url, range: setup.samples[sample], check: id, sample: sample, last: check.next.isEmpty) {
            leaveOut(id, why: "its request could not be set up")
        }
    }

    /// One of the mirror's blocks came (or failed).
    private func answered(_ id: Int, _ request: Request, result: CURLcode) {
        guard let check = checks[id] else { return }
        let range = setup.samples[request.sample]
        if check.remote == nil {
            switch firstAnswer(check.url, request, result: result) {
            case .failure(let why):
                leaveOut(id, why: why.message)
            case .success(let remote):
                checks[id]?.remote = remote
                askNext(id)
            }
            return
        }
        guard let remote = check.remote, let body = Self.exactBody(request, result: result, range: range, from: remote) else {
            if let error = Self.failure(request, result: result, url: check.url, options: setup.mirror) {
                return leaveOut(id, why: error.message)
            }
            return leaveOut(id, why: Self.otherBytes(range))
        }
        guard body == setup.references[request.sample] else { return leaveOut(id, why: Self.otherBytes(range)) }
        askNext(id)
    }

    /// What the answer to a mirror's first block says about it: its probe, or why it is left out.
    private func firstAnswer(_ url: String, _ request: Request, result: CURLcode) -> Result<RemoteFile, Reason> {
        let head = request.sink.head
        if head.isComplete, let error = head.statusError(url: url) { return .failure(Reason(error.message)) }
        if head.isComplete, head.status != 206 { return .failure(Reason("it serves no byte ranges")) }
        if let error = Self.failure(request, result: result, url: url, options: setup.mirror) { return .failure(Reason(error.message)) }
        guard let size = head.contentRange?.completeLength, size == setup.size else {
            let has = head.contentRange?.completeLength.map { "\($0) bytes" } ?? "no known size"
            return .failure(Reason("it has \(has), the main URL \(setup.size)"))
        }
        let effective = request.easy.effectiveURL ?? url
        var remote = Prober(request: setup.mirror, cancellation: stop, loop: loop).remoteFile(url: url, effectiveURL: effective, response: head)
        remote.size = size
        remote.acceptsRanges = true
        let range = setup.samples[request.sample]
        guard Self.exactBody(request, result: result, range: range, from: remote) == setup.references[request.sample] else {
            return .failure(Reason(Self.otherBytes(range)))
        }
        return .success(remote)
    }

    /// Every block of the check matched the main URL's: the mirror joins the download.
    private func agree(_ id: Int) {
        guard let check = checks[id], let remote = check.remote else { return }
        checks[id] = nil
        candidates.noteAgreed(check.url)
        if !setup.provesMirrors, !saidSpotChecksOnly {
            saidSpotChecksOnly = true
            feed.warn(.mirrorsSpotCheckedOnly)
        }
        feed.agreed(remote)
    }

    private func leaveOut(_ id: Int, why: String) {
        guard let check = checks[id] else { return }
        end(id)
        feed.warn(.mirrorLeftOut(url: Redaction.url(check.url), why: why))
    }

    /// Ends a check's request (libcurl closes its connection) and the check.
    private func end(_ id: Int) {
        if let token = checks[id]?.request, let request = requests.removeValue(forKey: token) { loop.remove(request.easy) }
        checks[id] = nil
    }

    private func sayLate() {
        let why = "not checked within the \(Int(MirrorAgreement.agreementSeconds)) s a mirror may take to agree"
        Self.leftOut(late, why: why).map(feed.warn)
        late = []
    }

    // MARK: Requests

    /// Starts a GET of `range` of `url`; `false` when libcurl would not take it. The `last`
    /// request of a check closes its connection when done.
    private func request(_ url: String, range: ByteRange, check: Int, sample: Int, last: Bool) -> Bool {
        guard let easy = try? CurlEasy() else { return false }
        setup.mirror.configure(easy, url: url, extraHeaders: ["Accept-Encoding: identity"])
        easy.set(CURLOPT_RANGE, range.httpRangeSpec)
        if last { easy.set(CURLOPT_FORBID_REUSE, true) }
        // A mirror that ignores the range is stopped after the block's worth of body.
        let sink = ResponseSink(cancellation: stop, bodyLimit: Int(range.count))
        sink.attach(to: easy)
        nextToken += 1
        do {
            try loop.add(easy, token: nextToken)
        } catch {
            return false
        }
        requests[nextToken] = Request(easy: easy, sink: sink, check: check, sample: sample)
        checks[check]?.request = nextToken
        return true
    }

    /// The body of an answer that is exactly `range` of `remote` (a 206 a download request would
    /// accept), else `nil`.
    private static func exactBody(_ request: Request, result: CURLcode, range: ByteRange, from remote: RemoteFile) -> [UInt8]? {
        guard result == CURLE_OK, MirrorAgreement.isExactSample(request.sink.head, of: range, from: remote),
              let body = request.sink.body, body.count == Int(range.count) else { return nil }
        return body
    }

    /// The error of a request that failed at the HTTP or transport level, if it did.
    private static func failure(_ request: Request, result: CURLcode, url: String, options: RequestOptions) -> DownloadError? {
        if request.sink.head.isComplete, let error = request.sink.head.statusError(url: url) { return error }
        guard result != CURLE_OK else { return nil }
        return TransferFailure.curl(result, url: url, detail: request.easy.errorDetail, proxy: options.proxyInUse(for: url))
    }

    private static func otherBytes(_ range: ByteRange) -> String {
        "it serves other bytes than the main URL at bytes \(range.httpRangeSpec)"
    }

    /// One warning naming the first of `names` and counting the others; `nil` for none.
    static func leftOut(_ names: [String], why: String) -> DownloadWarning? {
        guard let first = names.first else { return nil }
        let more = names.count > 1 ? "; \(names.count - 1) more mirrors left out too" : ""
        return .mirrorLeftOut(url: first, why: why + more)
    }

    /// Why a mirror is left out, as a `Result`'s failure.
    struct Reason: Error {
        let message: String

        init(_ message: String) { self.message = message }
    }
}

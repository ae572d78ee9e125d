import CCurl

/// The checks that let a mirror serve ranges of a download, run as parallel requests on a loop
/// of their own (on a thread beside the download's, started by ``MirrorAgreement``) while the
/// main URL already downloads. Every candidate is checked at once:
///
/// 1. the main URL's sampled blocks (``MirrorAgreement/sampleRanges(size:)``) are fetched, the
///    reference every mirror is compared with;
/// 2. each mirror is asked for the last block first: its answer must be a 206 of that block of a
///    file of the main URL's size (this is its probe: size, validators, where it redirects);
/// 3. then for the other blocks, all at once; a mirror whose blocks all match the main URL's
///    agrees, and goes to the ``MirrorFeed``, which the running engine takes it from.
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
        /// Options of the reference requests (the main URL's) and of the mirrors' (short limits).
        var reference: RequestOptions
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
        /// The check it belongs to; `nil`: a reference block of the main URL.
        let check: Int?
        let sample: Int
    }

    private struct Check {
        let url: String
        let deadline: Double
        /// What its answer to the first block said about it.
        var remote: RemoteFile?
        var answers: [[UInt8]?]
        var requests: Set<Int> = []
    }

    private var requests: [Int: Request] = [:]
    private var nextToken = 0
    private var references: [[UInt8]?]
    private let referenceDeadline: Double
    private var checks: [Int: Check] = [:]
    private var nextCheck = 0
    /// Mirrors not checked in time, named together once no check is running.
    private var late: [String] = []
    private var saidSpotChecksOnly = false
    private var failed = false

    init(_ setup: Setup, candidates: MirrorCandidates, feed: MirrorFeed, loop: CurlLoop, stop: CancellationFlag) {
        self.setup = setup
        self.candidates = candidates
        self.feed = feed
        self.loop = loop
        self.stop = stop
        references = Array(repeating: nil, count: setup.samples.count)
        let now = MonotonicTime.now()
        referenceDeadline = now + MirrorAgreement.agreementSeconds
        for (index, range) in setup.samples.enumerated() {
            guard request(Source(remote: setup.primary).requestURL, range: range, check: nil, sample: index) else {
                give(up: MirrorAgreement.referenceFailure(url: setup.mainURL))
                return
            }
        }
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
        if references.contains(where: { $0 == nil }), now >= referenceDeadline {
            give(up: MirrorAgreement.referenceFailure(url: setup.mainURL))
        }
        for (id, check) in checks where now >= check.deadline {
            end(id)
            late.append(Redaction.url(check.url))
        }
    }

    func afterTransfers(finished: [CurlLoop.Finished], now: Double) throws(DownloadError) -> CurlLoop.Next {
        for end in finished {
            guard let request = requests.removeValue(forKey: end.token) else { continue }
            if let id = request.check {
                checks[id]?.requests.remove(end.token)
                answered(id, request, result: end.result)
            } else if let body = Self.exactBody(request, result: end.result, range: setup.samples[request.sample], from: setup.primary) {
                references[request.sample] = body
            } else {
                give(up: MirrorAgreement.referenceFailure(url: setup.mainURL))
            }
        }
        for id in checks.keys.sorted() { judge(id) }
        if checks.isEmpty { sayLate() }
        // Nothing to check now and nothing to replace later: the thread ends.
        if failed || (checks.isEmpty && (candidates.agreed.isEmpty || candidates.backups.isEmpty)) { return .done }
        return .wait(milliseconds: requests.isEmpty ? 1000 : 100)
    }

    // MARK: One mirror

    private func begin(_ url: String, now: Double) {
        guard !failed else { return }
        if SourceAddress.downgradesToPlainHTTP(from: setup.mainURL, to: url) { feed.warn(.plainHTTPMirror(url: Redaction.url(url))) }
        let id = nextCheck
        nextCheck += 1
        checks[id] = Check(url: url, deadline: now + MirrorAgreement.agreementSeconds,
                           answers: Array(repeating: nil, count: setup.samples.count))
        let last = setup.samples.count - 1
        if !request(url, range: setup.samples[last], check: id, sample: last) { leaveOut(id, why: "its request could not be set up") }
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
                checks[id]?.answers[request.sample] = request.sink.body ?? []
                for index in setup.samples.indices where index != request.sample {
                    guard self.request(Source(remote: remote).requestURL, range: setup.samples[index], check: id, sample: index) else {
                        return leaveOut(id, why: "its request could not be set up")
                    }
                }
            }
            return
        }
        guard let remote = check.remote, let body = Self.exactBody(request, result: result, range: range, from: remote) else {
            if let error = Self.failure(request, result: result, url: check.url, options: setup.mirror) {
                return leaveOut(id, why: error.message)
            }
            return leaveOut(id, why: Self.otherBytes(range))
        }
        checks[id]?.answers[request.sample] = body
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
        guard Self.exactBody(request, result: result, range: range, from: remote) != nil else { return .failure(Reason(Self.otherBytes(range))) }
        return .success(remote)
    }

    /// A check with every block in, compared with the main URL's once those are in too.
    private func judge(_ id: Int) {
        guard let check = checks[id], let remote = check.remote, check.requests.isEmpty else { return }
        let answers = check.answers.compactMap { $0 }, reference = references.compactMap { $0 }
        guard answers.count == setup.samples.count, reference.count == setup.samples.count else { return }
        if let differs = setup.samples.indices.first(where: { answers[$0] != reference[$0] }) {
            return leaveOut(id, why: Self.otherBytes(setup.samples[differs]))
        }
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

    /// Ends a check's requests and the check.
    private func end(_ id: Int) {
        for token in checks[id]?.requests ?? [] {
            if let request = requests.removeValue(forKey: token) { loop.remove(request.easy) }
        }
        checks[id] = nil
    }

    /// The main URL's blocks cannot be had: no mirror can be compared with it.
    private func give(up warning: DownloadWarning) {
        guard !failed else { return }
        failed = true
        for request in requests.values { loop.remove(request.easy) }
        requests = [:]
        checks = [:]
        feed.warn(warning)
    }

    private func sayLate() {
        let why = "not checked within the \(Int(MirrorAgreement.agreementSeconds)) s a mirror may take to agree"
        Self.leftOut(late, why: why).map(feed.warn)
        late = []
    }

    // MARK: Requests

    /// Starts a GET of `range` of `url`; `false` when libcurl would not take it.
    private func request(_ url: String, range: ByteRange, check: Int?, sample: Int) -> Bool {
        guard let easy = try? CurlEasy() else { return false }
        let options = check == nil ? setup.reference : setup.mirror
        options.configure(easy, url: url, extraHeaders: ["Accept-Encoding: identity"])
        easy.set(CURLOPT_RANGE, range.httpRangeSpec)
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
        if let check { checks[check]?.requests.insert(nextToken) }
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

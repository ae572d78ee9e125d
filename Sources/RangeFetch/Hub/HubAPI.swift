#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

/// The Hub's API for one repository, asked on the caller's thread: the commit a revision is at,
/// the recursive file listing at that commit, a page at a time (`Link: rel="next"`), and small
/// files whole. The token goes with every request (they all go to the Hub's own origin); a 429
/// or 5xx answer is asked again after the Hub's `Retry-After` (or 1, 2, 4… seconds, each up to
/// half again at random), at most ``maximumTries`` (``maximumRateLimitedTries`` for 429); and
/// an answer whose `RateLimit` header says none is left (`r=0;t=N`) is followed by a wait of `t`
/// seconds, so calls one after another stay under the Hub's limit.
struct HubAPI {
    var settings: HubSettings
    var repository: HubRepository
    var fetcher: SmallGet

    static let maximumTries = 5
    /// Tries of a call the Hub keeps answering 429: its limit is shared with whoever else uses
    /// the token or the address (other shards), so a refusal means "later", not "broken".
    static let maximumRateLimitedTries = 12
    /// The longest wait for one `Retry-After` (a Hub asking for more is given up on).
    static let longestWaitSeconds = 60.0
    /// The most listing pages followed (the Hub gives 1,000 files a page).
    static let maximumPages = 10_000

    /// The commit ``HubRepository/revision`` is at.
    func commit() throws(DownloadError) -> String {
        let answer = try get(repository.revisionURL(endpoint: settings.endpoint))
        return try HubListing.commit(answer.body, what: repository.description)
    }

    /// Every file of the repository at `commit`.
    func files(commit: String) throws(DownloadError) -> [HubFile] {
        var files: [HubFile] = []
        var next: String? = repository.treeURL(endpoint: settings.endpoint, commit: commit)
        var seen: Set<String> = []
        while let url = next {
            guard seen.insert(url).inserted, seen.count <= Self.maximumPages else {
                throw DownloadError(.protocolViolation, "\(repository.description): the Hub's file listing does not end (page \(seen.count) repeats or is one too many)", url: url)
            }
            let answer = try get(url)
            files += try HubListing.files(answer.body, what: repository.description)
            next = answer.head["link"].flatMap { value in
                LinkHeader.parse(value).first { $0.relations.contains("next") }?.target
            }
            if let page = next, !RequestOptions.sameOrigin(page, settings.endpoint) {
                throw DownloadError(.protocolViolation, "\(repository.description): the listing's next page is on another origin (\(Redaction.url(page))); refused, since the token goes with it", url: page)
            }
        }
        return files
    }

    /// The largest small file fetched whole here (the Hub keeps files over 10 MB in LFS); a
    /// larger one goes with the large files.
    static let largestSmallFile: Int64 = 10 << 20

    /// A small file's bytes at `commit` (one request: no probe, which would be a second call
    /// against the Hub's limit), proven by their git blob id.
    /// - Throws: `checksumMismatch` naming the file when the bytes are not the listing's.
    func smallFile(_ file: HubFile, commit: String) throws(DownloadError) -> [UInt8] {
        let answer = try get(repository.resolveURL(endpoint: settings.endpoint, commit: commit, path: file.path))
        let actual = HubStaging.gitBlobID(of: answer.body)
        guard actual == file.gitOID else {
            throw DownloadError(.checksumMismatch, "\(file.path): its bytes have git id \(actual), the Hub's listing says \(file.gitOID); nothing was written (run again to fetch it again)")
        }
        return answer.body
    }

    /// GETs `url`, asked again after a 429 or 5xx; any other answer but 200 is an error that
    /// says what the Hub said and what to do.
    private func get(_ url: String) throws(DownloadError) -> SmallGet.Answer {
        var tries = 0
        while true {
            tries += 1
            let answer = try fetcher.fetch(url)
            if answer.status == 200 {
                if let wait = Self.exhaustedWindowSeconds(answer.head["ratelimit"]) { try pause(seconds: min(wait, Self.longestWaitSeconds)) }
                return answer
            }
            let limited = answer.status == 429
            let transient = limited || answer.status >= 500
            let wait = RetryPolicy.retryAfterSeconds(answer.head["retry-after"]) ?? Double(1 << min(tries - 1, 5))
            guard transient, tries < (limited ? Self.maximumRateLimitedTries : Self.maximumTries), wait <= Self.longestWaitSeconds else {
                throw error(status: answer.status, head: answer.head, url: url, tries: tries)
            }
            // Up to half as long again at random: clients refused together do not all come back
            // at the same instant, where the one that paces itself in bursts would win every time.
            try pause(seconds: wait * Double.random(in: 1...1.5))
        }
    }

    /// The seconds until the window of a `RateLimit` field (`"name";r=REMAINING;t=SECONDS`) opens
    /// again, when nothing of it remains; `nil` otherwise.
    static func exhaustedWindowSeconds(_ field: String?) -> Double? {
        guard let field else { return nil }
        var remaining: Int?, seconds: Int?
        for parameter in field.split(separator: ";") {
            let pair = parameter.split(separator: "=", maxSplits: 1).map { String($0).trimmingASCIIWhitespace() }
            guard pair.count == 2 else { continue }
            if pair[0] == "r" { remaining = Int(pair[1]) }
            if pair[0] == "t" { seconds = Int(pair[1]) }
        }
        guard remaining == 0, let seconds, seconds > 0 else { return nil }
        return Double(seconds)
    }

    private func pause(seconds: Double) throws(DownloadError) {
        var left = seconds
        while left > 0 {
            if fetcher.cancellation.isCancelled { throw .cancelled() }
            usleep(UInt32(min(left, 0.1) * 1_000_000))
            left -= 0.1
        }
    }

    /// The Hub's answer as an error: its `X-Error-Code` read as huggingface_hub reads it (a
    /// private repository answers "not found" to a request without a token, to hide it).
    func error(status: Int, head: ResponseHead, url: String, tries: Int) -> DownloadError {
        let code = head["x-error-code"]
        let said = head["x-error-message"].map { ": the Hub said \"\(TerminalText.escaped(String($0.prefix(300))))\"" } ?? ""
        let name = repository.description
        let message: String
        switch (code, status) {
        case ("RepoNotFound", _), (nil, 401):
            message = settings.token == nil
                ? "\(name): repository not found, or private (no token was sent: set HF_TOKEN, or log in with `hf auth login`)"
                : "\(name): repository not found, or your token cannot read it (HTTP \(status))"
        case ("RevisionNotFound", _):
            message = "\(name): revision '\(repository.revision)' not found (HTTP \(status))"
        case ("GatedRepo", _):
            message = "\(name): a gated repository; accept its conditions on the Hub with this token's account (HTTP \(status))\(said)"
        case (_, 429):
            message = "\(name): the Hub kept answering 429 (too many requests) after \(tries) tries; wait and run again\(said)"
        default:
            message = "\(name): HTTP \(status) from \(Redaction.url(url))\(said)"
        }
        return DownloadError(.httpStatus(status), message, url: url)
    }
}

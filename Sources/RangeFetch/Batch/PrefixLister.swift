import RangeFetchBase
import RangeFetchNetwork

/// How an object under a listed prefix becomes a batch entry: its `s3://BUCKET/KEY`, saved under
/// the key's path relative to the prefix (each folder and file name made safe as a server's file
/// name is: no control characters, dot names, `..`), with its MD5 to check where the ETag is one.
/// Folder markers (keys ending in `/`) and keys with no usable name give no entry.
struct PrefixEntryMapping: Sendable {
    /// The prefix (its key ends in `/`, or is empty).
    let prefix: S3Location
    /// The prefix's URL as given: the entries' ``BatchEntry/origin``.
    let prefixURL: String

    /// The entry for `object`, or `nil` when it is not a file to fetch.
    func entry(for object: S3Client.Object) -> BatchEntry? {
        guard !object.key.hasSuffix("/") else { return nil }
        let relative = object.key.dropFirst(prefix.key.count).split(separator: "/")
            .compactMap { FileName.usable(String($0), from: .server) }.joined(separator: "/")
        guard !relative.isEmpty else { return nil }
        let md5 = object.md5.flatMap { DigestValue(algorithm: .md5, hex: $0) }
        return BatchEntry(url: S3Location(bucket: prefix.bucket, key: object.key).url, output: relative,
                          checksums: md5.map { [$0] } ?? [], origin: prefixURL)
    }
}

/// The objects under an `s3://BUCKET/PREFIX/` URL as batch entries, a page at a time: the next
/// page is asked for only once every entry of the one before was taken, so however many objects
/// the prefix holds, the lister holds one page (1,000 keys on S3) and no more.
///
/// A listing that fails (an HTTP error, a continuation token sent twice, a page that is not a
/// listing) throws from ``next()`` when it reaches that page, naming the prefix.
/// Not thread-safe: one caller at a time (``BatchFeed`` takes it under its lock).
final class PrefixLister {
    /// The prefix's URL as given.
    let url: String
    private let source: any ListingPageSource
    private let mapping: PrefixEntryMapping
    private var pager: ListingPager
    /// The page being handed out, from `position` on.
    private var page: [S3Client.Object] = []
    private var position = 0
    private var token: String?
    private var lastPageFetched = false
    /// Pages asked for so far.
    private(set) var pagesFetched = 0
    /// The most objects held at once (a page's): the bound on this lister's memory.
    private(set) var mostObjectsHeld = 0

    /// A lister of `mapping`'s prefix reading pages from `source`.
    init(source: any ListingPageSource, mapping: PrefixEntryMapping) {
        url = mapping.prefixURL
        self.source = source
        self.mapping = mapping
        pager = ListingPager(what: mapping.prefix.url)
    }

    /// A lister of `prefix` (resolved as a prefix: ``ResolvedSource/init(prefix:request:s3:)``),
    /// signed and sent as it says; its requests stop once `cancellation` is set. `pageSize`: keys a
    /// page asks for (`nil`: the store's default).
    /// - Throws: when no libcurl handle can be made; `invalidURL` for a source resolved as an object.
    static func s3(_ prefix: ResolvedSource, cancellation: CancellationFlag,
                   pageSize: Int? = nil) throws(DownloadError) -> PrefixLister {
        guard let location = prefix.address.s3, location.isPrefix, let configuration = prefix.s3 else {
            throw DownloadError(.invalidURL, "\(prefix.text): not an s3://BUCKET/PREFIX/ URL", url: prefix.text)
        }
        let client = S3Client(configuration: configuration, request: prefix.request, cancellation: cancellation,
                              loop: try CurlLoop())
        return PrefixLister(source: S3PrefixPages(client: client, location: location, pageSize: pageSize),
                            mapping: PrefixEntryMapping(prefix: location, prefixURL: prefix.text))
    }

    /// A lister of the same prefix from its first page (to read its earlier entries again).
    func restarted() -> PrefixLister {
        PrefixLister(source: source, mapping: mapping)
    }

    /// The next object's entry, asking for the next page once this one is used up; `nil` at the end.
    func next() throws(DownloadError) -> BatchEntry? {
        while true {
            while position < page.count {
                defer { position += 1 }
                if let entry = mapping.entry(for: page[position]) { return entry }
            }
            guard !lastPageFetched else {
                page = []
                return nil
            }
            // The used page goes before the next one comes.
            page = []
            position = 0
            let fetched = try source.page(after: token)
            pagesFetched += 1
            token = try pager.next(fetched.nextToken)
            lastPageFetched = token == nil
            page = fetched.objects
            mostObjectsHeld = max(mostObjectsHeld, page.count)
        }
    }

    /// The first of `listers`' first `count` entries (in their order, each from its first page)
    /// saved at `path`, read by listing them again.
    static func earlier(among listers: [PrefixLister], withPath path: String, before count: Int,
                        defaultDirectory: String) throws(DownloadError) -> BatchEntry? {
        var remaining = count
        for lister in listers where remaining > 0 {
            let again = lister.restarted()
            while remaining > 0, let entry = try again.next() {
                remaining -= 1
                if entry.expectedPath(defaultDirectory: defaultDirectory) == path { return entry }
            }
        }
        return nil
    }
}

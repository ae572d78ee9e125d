/// One ListObjectsV2 page: its objects, and the token of the next page when it is truncated.
struct ListingPage: Sendable, Equatable {
    var objects: [S3Client.Object]
    var nextToken: String?
}

/// Where a ``PrefixLister`` gets its pages: S3 (``S3PrefixPages``), or a fake in the tests.
protocol ListingPageSource {
    /// The page that `token` starts (`nil`: the first page).
    func page(after token: String?) throws(DownloadError) -> ListingPage
}

/// The pages of one prefix from S3, each a signed ListObjectsV2 request.
struct S3PrefixPages: ListingPageSource {
    let client: S3Client
    let location: S3Location
    /// Keys a page asks for (`max-keys`); `nil`: the store's default (1,000 on S3).
    let pageSize: Int?

    func page(after token: String?) throws(DownloadError) -> ListingPage {
        try client.page(bucket: location.bucket, prefix: location.key, continuationToken: token, maxKeys: pageSize)
    }
}

import RangeFetchBase

/// One ListObjectsV2 page: its objects, and the token of the next page when it is truncated.
package struct ListingPage: Sendable, Equatable {
    package var objects: [S3Client.Object]
    package var nextToken: String?

    package init(objects: [S3Client.Object], nextToken: String? = nil) {
        self.objects = objects
        self.nextToken = nextToken
    }
}

/// Where a ``PrefixLister`` gets its pages: S3 (``S3PrefixPages``), or a fake in the tests.
package protocol ListingPageSource {
    /// The page that `token` starts (`nil`: the first page).
    func page(after token: String?) throws(DownloadError) -> ListingPage
}

/// The pages of one prefix from S3, each a signed ListObjectsV2 request.
package struct S3PrefixPages: ListingPageSource {
    package let client: S3Client
    package let location: S3Location
    /// Keys a page asks for (`max-keys`); `nil`: the store's default (1,000 on S3).
    package let pageSize: Int?

    package func page(after token: String?) throws(DownloadError) -> ListingPage {
        try client.page(bucket: location.bucket, prefix: location.key, continuationToken: token, maxKeys: pageSize)
    }

    package init(client: S3Client, location: S3Location, pageSize: Int?) {
        self.client = client
        self.location = location
        self.pageSize = pageSize
    }
}

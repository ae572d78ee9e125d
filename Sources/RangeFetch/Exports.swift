// The public face re-exports the two targets below it, so an embedder imports `RangeFetch` alone
// and sees the library's public types, wherever they live (`DownloadError`, `ByteRange`,
// `ChecksumSpec`…).
@_exported import RangeFetchBase
@_exported import RangeFetchNetwork

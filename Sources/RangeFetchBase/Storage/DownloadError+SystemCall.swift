extension DownloadError {
    /// Runs `body`, a failed system call in it turned into the user-facing error
    /// (``SystemCallError/downloadError``).
    package static func withSystemCalls<Value>(_ body: () throws(SystemCallError) -> Value) throws(DownloadError) -> Value {
        do {
            return try body()
        } catch {
            throw error.downloadError
        }
    }
}

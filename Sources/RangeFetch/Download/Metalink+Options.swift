#if canImport(Glibc)
import RangeFetchBase
import RangeFetchNetwork
import Glibc
#endif

extension Metalink {
    /// Reads and parses the metalink file at `path` (at most ``maximumBytes`` are read).
    /// - Throws: `invalidOption` for a file that cannot be read or is no usable metalink
    ///   (``parse(_:origin:)``), naming the path.
    public static func load(path: String) throws(DownloadError) -> Metalink {
        let bytes: [UInt8]
        do {
            let descriptor = try FileDescriptor.open(path, O_RDONLY | O_CLOEXEC)
            defer { descriptor.close() }
            // One byte past the limit, so that a larger file is told apart from one at the limit.
            bytes = try descriptor.read(upTo: maximumBytes + 1)
        } catch {
            throw DownloadError(.invalidOption, "metalink \(path): cannot be read (\(String(cString: strerror(error.errno))))")
        }
        return try parse(bytes, origin: path)
    }

    /// The download this metalink describes, on top of `options`: returns the URL to request
    /// (the most preferred) and sets the others as mirrors (after any already given), the
    /// whole-file digests as checksums (one given for the same algorithm wins), the size and the
    /// piece digests. Saved into a directory (the default), the file takes the metalink's name
    /// there, and a link planted at that name is not followed; an output path given stays.
    public func apply(to options: inout DownloadOptions) -> String {
        options.mirrors += locations.dropFirst().map(\.url).filter { !options.mirrors.contains($0) }
        options.backupMirrors += backupLocations.map(\.url).filter { !options.backupMirrors.contains($0) }
        for digest in digests where !options.checksums.contains(where: { $0.algorithm == digest.algorithm }) {
            options.checksums.append(digest)
        }
        options.expectedSize = size
        options.pieceDigests = pieces
        if case .directory(let directory) = options.destination {
            options.destination = .file(directory == "." ? name : directory.hasSuffix("/") ? directory + name : directory + "/" + name)
            options.followsLinkAtOutputPath = false
        }
        return locations[0].url
    }
}

extension BatchEntry {
    /// An entry whose ``url`` names a local metalink file (`SourceAddress.isMetalinkFile(_:)`)
    /// made the download it describes, as ``Metalink/apply(to:)`` does for one file: its best
    /// URL, the rest as mirrors after any given, its digests where none of that algorithm was
    /// given, its size and pieces, and its name unless `out=` gave one. Other entries are
    /// returned as they are.
    /// - Throws: the metalink's failure (``Metalink/load(path:)``), prefixed with the entry's origin.
    public func resolvingMetalink() throws(DownloadError) -> BatchEntry {
        guard SourceAddress.isMetalinkFile(url) else { return self }
        let metalink: Metalink
        do {
            metalink = try Metalink.load(path: url)
        } catch {
            throw origin.map { error.with(message: "\($0): \(error.message)") } ?? error
        }
        var entry = self
        entry.url = metalink.locations[0].url
        entry.mirrors += metalink.locations.dropFirst().map(\.url).filter { !entry.mirrors.contains($0) }
        for digest in metalink.digests where !entry.checksums.contains(where: { $0.algorithm == digest.algorithm }) {
            entry.checksums.append(digest)
        }
        entry.expectedSize = metalink.size
        entry.pieceDigests = metalink.pieces
        if entry.output == nil { entry.output = metalink.name }
        return entry
    }
}

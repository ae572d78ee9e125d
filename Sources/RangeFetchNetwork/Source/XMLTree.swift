import RangeFetchBase
import CXML

/// An XML document read by libxml2 into elements with their text and attributes: enough for
/// S3's answers (ListObjectsV2 pages, error bodies) and metalinks, which are small and shallow.
/// Entities a DTD declares are never expanded; a reader that wants no DTD at all refuses it
/// (``parse(_:refusingDocumentType:)``).
package struct XMLTree {
    package struct Element: Equatable {
        package var name: String
        /// The element's own character data (entities and CDATA resolved).
        package var text = ""
        package var children: [Element] = []
        /// The element's attributes by local name (namespace prefixes dropped).
        package var attributes: [String: String] = [:]

        /// The first child named `name`.
        package subscript(name: String) -> Element? { children.first { $0.name == name } }

        /// Every child named `name`, in document order.
        package func all(_ name: String) -> [Element] { children.filter { $0.name == name } }
    }

    package enum Failure: Error, Equatable {
        /// libxml2 (`libxml2.so.2`) could not be loaded.
        case noParser
        case malformed
        /// The document declares a document type (`<!DOCTYPE`), which nothing we read needs.
        case documentType
    }

    /// The document's root element.
    /// - Parameter refusingDocumentType: throw ``Failure/documentType`` for a document with a
    ///   `<!DOCTYPE>` (a metalink never has one; an entity bomb does).
    package static func parse(_ bytes: [UInt8], refusingDocumentType: Bool = false) throws(Failure) -> Element {
        guard !bytes.isEmpty else { throw .malformed }
        // Looked for before libxml2 reads a byte: it may fail on the DTD's entities (its own
        // amplification limit) before it reports the declaration.
        if refusingDocumentType && prologDeclaresDocumentType(bytes) { throw .documentType }
        let builder = Builder()
        let status = bytes.withUnsafeBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { base in
                rfxml_read(base, buffer.count, Unmanaged.passUnretained(builder).toOpaque()) { context, kind, name, value in
                    let builder = Unmanaged<Builder>.fromOpaque(context!).takeUnretainedValue()
                    builder.visit(kind: kind, name: name.map { String(cString: $0) }, value: value.map { String(cString: $0) })
                }
            }
        }
        guard status != -1 else { throw .noParser }
        guard !(refusingDocumentType && builder.sawDocumentType) else { throw .documentType }
        guard status == 0, let root = builder.root else { throw .malformed }
        return root
    }

    /// Whether the prolog of the (UTF-8) document in `bytes`, before its first element, holds a
    /// `<!DOCTYPE`; comments and processing instructions are skipped.
    package static func prologDeclaresDocumentType(_ bytes: [UInt8]) -> Bool {
        var index = bytes.startIndex
        func at(_ text: String) -> Bool { bytes[index...].starts(with: text.utf8) }
        func skip(past end: String) {
            let marker = Array(end.utf8)
            while index < bytes.endIndex, !bytes[index...].starts(with: marker) { index += 1 }
            index = min(bytes.endIndex, index + marker.count)
        }
        while index < bytes.endIndex {
            if at("<!DOCTYPE") { return true }
            if at("<!--") { skip(past: "-->"); continue }
            if at("<?") { skip(past: "?>"); continue }
            if bytes[index] == UInt8(ascii: "<") { return false } // the root element
            index += 1
        }
        return false
    }

    /// Assembles elements from the reader's start, text and end reports.
    private final class Builder {
        var open: [Element] = []
        var root: Element?
        var sawDocumentType = false

        func visit(kind: Int32, name: String?, value: String?) {
            switch kind {
            case Int32(RFXML_START.rawValue):
                open.append(Element(name: name ?? ""))
            case Int32(RFXML_TEXT.rawValue):
                if !open.isEmpty { open[open.count - 1].text += value ?? "" }
            case Int32(RFXML_DOCTYPE.rawValue):
                sawDocumentType = true
            case Int32(RFXML_ATTRIBUTE.rawValue):
                if let name, !open.isEmpty { open[open.count - 1].attributes[name] = value ?? "" }
            case Int32(RFXML_END.rawValue):
                guard let element = open.popLast() else { return }
                if open.isEmpty { root = element } else { open[open.count - 1].children.append(element) }
            default:
                break
            }
        }
    }

    package init() {
    }
}

import CXML

/// An XML document read by libxml2 into elements with their text: enough for S3's answers
/// (ListObjectsV2 pages, error bodies), which are small and shallow.
struct XMLTree {
    struct Element: Equatable {
        var name: String
        /// The element's own character data (entities and CDATA resolved).
        var text = ""
        var children: [Element] = []

        /// The first child named `name`.
        subscript(name: String) -> Element? { children.first { $0.name == name } }

        /// Every child named `name`, in document order.
        func all(_ name: String) -> [Element] { children.filter { $0.name == name } }
    }

    enum Failure: Error, Equatable {
        /// libxml2 (`libxml2.so.2`) could not be loaded.
        case noParser
        case malformed
    }

    /// The document's root element.
    static func parse(_ bytes: [UInt8]) throws(Failure) -> Element {
        guard !bytes.isEmpty else { throw .malformed }
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
        guard status == 0, let root = builder.root else { throw .malformed }
        return root
    }

    /// Assembles elements from the reader's start, text and end reports.
    private final class Builder {
        var open: [Element] = []
        var root: Element?

        func visit(kind: Int32, name: String?, value: String?) {
            switch kind {
            case Int32(RFXML_START.rawValue):
                open.append(Element(name: name ?? ""))
            case Int32(RFXML_TEXT.rawValue):
                if !open.isEmpty { open[open.count - 1].text += value ?? "" }
            case Int32(RFXML_END.rawValue):
                guard let element = open.popLast() else { return }
                if open.isEmpty { root = element } else { open[open.count - 1].children.append(element) }
            default:
                break
            }
        }
    }
}

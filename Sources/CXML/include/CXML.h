// libxml2's streaming reader, opened at first use with dlopen("libxml2.so.2") rather than linked:
// only S3 answers and metalinks are XML, and linking an XML stack (libxml2 and ICU, or Foundation's XMLParser
// over them) costs every download megabytes of resident memory at start-up.
#ifndef CXML_H
#define CXML_H
#include <stddef.h>

/// What `rfxml_read` reports, in document order.
enum rfxml_kind {
    RFXML_START = 1, ///< an element begins: `name` is its local name
    RFXML_TEXT = 2,  ///< character data (text or CDATA) inside the current element: `value`
    RFXML_END = 3,   ///< the current element ends (also reported for `<empty/>`)
    RFXML_ATTRIBUTE = 4, ///< an attribute of the element just started: `name` (local), `value`
    RFXML_DOCTYPE = 5,   ///< the document declares a document type (`<!DOCTYPE ...>`)
};

typedef void (*rfxml_visit)(void *context, int kind, const char *name, const char *value);

/// Reads the XML document in `bytes` with libxml2 (no network, no external entities, errors not
/// printed) and calls `visit` for every element start (then its attributes), text and end.
/// Returns 0 when the document was well-formed, -1 when libxml2 cannot be loaded, -2 when the
/// document is not well-formed (`visit` may have been called for what came before the error).
/// Entities declared in a DTD are never expanded (references to them read as nothing).
int rfxml_read(const char *bytes, size_t count, void *context, rfxml_visit visit);

#endif

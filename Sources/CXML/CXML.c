#include "CXML.h"
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>

// libxml2's reader API uses only opaque pointers and ints, so its functions are declared here
// by shape and looked up by name; no libxml2 headers are needed to build.
typedef void *reader_t;
typedef void (*error_func)(void *arg, const char *message, int severity, void *locator);

static struct {
    void (*init_parser)(void);
    reader_t (*for_memory)(const char *buffer, int size, const char *url, const char *encoding, int options);
    int (*read)(reader_t);
    int (*node_type)(reader_t);
    int (*is_empty)(reader_t);
    const char *(*local_name)(reader_t);
    const char *(*value)(reader_t);
    int (*next_attribute)(reader_t);
    int (*to_element)(reader_t);
    void (*set_error_handler)(reader_t, error_func, void *);
    void (*free_reader)(reader_t);
    int loaded;
} xml;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;

static void load(void) {
    void *library = dlopen("libxml2.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!library) return;
#define FIND(field, symbol) if (!(*(void **)&xml.field = dlsym(library, symbol))) return
    FIND(init_parser, "xmlInitParser");
    FIND(for_memory, "xmlReaderForMemory");
    FIND(read, "xmlTextReaderRead");
    FIND(node_type, "xmlTextReaderNodeType");
    FIND(is_empty, "xmlTextReaderIsEmptyElement");
    FIND(local_name, "xmlTextReaderConstLocalName");
    FIND(value, "xmlTextReaderConstValue");
    FIND(next_attribute, "xmlTextReaderMoveToNextAttribute");
    FIND(to_element, "xmlTextReaderMoveToElement");
    FIND(set_error_handler, "xmlTextReaderSetErrorHandler");
    FIND(free_reader, "xmlFreeTextReader");
#undef FIND
    xml.init_parser();
    xml.loaded = 1;
}

static void ignore_error(void *arg, const char *message, int severity, void *locator) {
    (void)arg; (void)message; (void)severity; (void)locator;
}

// libxml2's parser options (xmlParserOption) and reader node types (xmlReaderTypes).
enum { PARSE_NOERROR = 1 << 5, PARSE_NOWARNING = 1 << 6, PARSE_NONET = 1 << 11 };
enum { NODE_ELEMENT = 1, NODE_TEXT = 3, NODE_CDATA = 4, NODE_DOCUMENT_TYPE = 10, NODE_END_ELEMENT = 15 };

int rfxml_read(const char *bytes, size_t count, void *context, rfxml_visit visit) {
    pthread_once(&load_once, load);
    if (!xml.loaded) return -1;
    if (count > INT_MAX) return -2;
    reader_t reader = xml.for_memory(bytes, (int)count, NULL, NULL, PARSE_NOERROR | PARSE_NOWARNING | PARSE_NONET);
    if (!reader) return -2;
    xml.set_error_handler(reader, ignore_error, NULL);
    int status;
    while ((status = xml.read(reader)) == 1) {
        switch (xml.node_type(reader)) {
        case NODE_ELEMENT: {
            visit(context, RFXML_START, xml.local_name(reader), NULL);
            int empty = xml.is_empty(reader);
            while (xml.next_attribute(reader) == 1) {
                visit(context, RFXML_ATTRIBUTE, xml.local_name(reader), xml.value(reader));
            }
            xml.to_element(reader);
            if (empty) visit(context, RFXML_END, NULL, NULL);
            break;
        }
        case NODE_TEXT:
        case NODE_CDATA:
            visit(context, RFXML_TEXT, NULL, xml.value(reader));
            break;
        case NODE_END_ELEMENT:
            visit(context, RFXML_END, NULL, NULL);
            break;
        case NODE_DOCUMENT_TYPE:
            visit(context, RFXML_DOCTYPE, NULL, NULL);
            break;
        default:
            break;
        }
    }
    xml.free_reader(reader);
    return status == 0 ? 0 : -2;
}

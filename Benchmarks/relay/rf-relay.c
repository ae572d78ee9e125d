/*
 * rf-relay: a TCP relay on 127.0.0.1 that caps every connection's server->client direction
 * at RATE bytes per second, like a CDN that shapes each TCP flow.
 *
 * Why it exists: nginx's limit_rate applies per *request* and grants each request a one-second
 * burst, so a client issuing many small range requests is never throttled, even on one
 * connection. Shaping each TCP connection here makes "N connections beat one" a fair test.
 *
 *   rf-relay LISTEN_PORT UPSTREAM_PORT RATE_BYTES_PER_SEC     (RATE 0 = unlimited)
 *
 * One thread per direction per connection; a token bucket with a small burst (64 KiB) per
 * connection; client->server is not limited. Exits on SIGTERM/SIGINT.
 * Build: gcc -O2 -pthread -o rf-relay rf-relay.c
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Sends wait for at least MIN_SEND_BYTES of tokens: 1 KiB sends cost the relay hundreds of
 * thousands of syscalls a second at 16 x 25 MiB/s, CPU that the tools measured then lack. */
enum { BUFFER_BYTES = 256 * 1024, BURST_BYTES = 64 * 1024, MIN_SEND_BYTES = 16 * 1024 };

static int upstream_port;
static double rate; /* bytes per second; 0 = unlimited */

struct pipe_args {
    int from, to;
    int limited;
};

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_seconds(double seconds) {
    struct timespec ts = {(time_t)seconds, (long)((seconds - (time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) == -1 && errno == EINTR) {}
}

static int write_all(int fd, const char *data, size_t length) {
    while (length > 0) {
        ssize_t n = send(fd, data, length, MSG_NOSIGNAL);
        if (n < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        data += n;
        length -= (size_t)n;
    }
    return 0;
}

/* Copies from -> to until EOF or error; when limited, never faster than `rate`. */
static void *pump(void *raw) {
    struct pipe_args *args = raw;
    char *buffer = malloc(BUFFER_BYTES);
    double tokens = BURST_BYTES, last = now_seconds();
    for (;;) {
        size_t want = BUFFER_BYTES;
        if (args->limited && rate > 0) {
            double t = now_seconds();
            tokens += (t - last) * rate;
            last = t;
            if (tokens > BURST_BYTES) tokens = BURST_BYTES;
            if (tokens < MIN_SEND_BYTES) {
                sleep_seconds((MIN_SEND_BYTES - tokens) / rate);
                continue;
            }
            want = (size_t)tokens < want ? (size_t)tokens : want;
        }
        ssize_t n = recv(args->from, buffer, want, 0);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        if (write_all(args->to, buffer, (size_t)n) < 0) break;
        if (args->limited && rate > 0) tokens -= (double)n;
    }
    shutdown(args->to, SHUT_WR); /* pass the half-close on */
    shutdown(args->from, SHUT_RD);
    free(buffer);
    return NULL;
}

static void *connection(void *raw) {
    int client = (int)(intptr_t)raw;
    int server = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(upstream_port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (server < 0 || connect(server, (struct sockaddr *)&address, sizeof address) < 0) {
        close(client);
        if (server >= 0) close(server);
        return NULL;
    }
    int one = 1;
    setsockopt(server, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct pipe_args up = {client, server, 0}, down = {server, client, 1};
    pthread_t upward;
    pthread_create(&upward, NULL, pump, &up);
    pump(&down);
    pthread_join(upward, NULL);
    close(client);
    close(server);
    return NULL;
}

static void stop(int signal_number) {
    (void)signal_number;
    _exit(0);
}

int main(int argc, char **argv) {
    if (argc != 4) {
        fprintf(stderr, "usage: %s LISTEN_PORT UPSTREAM_PORT RATE_BYTES_PER_SEC\n", argv[0]);
        return 2;
    }
    int listen_port = atoi(argv[1]);
    upstream_port = atoi(argv[2]);
    rate = atof(argv[3]);
    signal(SIGPIPE, SIG_IGN);
    signal(SIGTERM, stop);
    signal(SIGINT, stop);

    int listener = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in address = {.sin_family = AF_INET, .sin_port = htons(listen_port)};
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(listener, (struct sockaddr *)&address, sizeof address) < 0 || listen(listener, 256) < 0) {
        perror("rf-relay: bind/listen");
        return 1;
    }
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attributes, 256 * 1024);
    for (;;) {
        int client = accept(listener, NULL, NULL);
        if (client < 0) {
            if (errno == EINTR) continue;
            perror("rf-relay: accept");
            continue;
        }
        pthread_t thread;
        if (pthread_create(&thread, &attributes, connection, (void *)(intptr_t)client) != 0) close(client);
    }
}

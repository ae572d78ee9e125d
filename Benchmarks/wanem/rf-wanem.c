/*
 * rf-wanem: a userspace WAN line between two network namespaces: link rate, one-way delay and
 * random loss, per direction, like `tc qdisc ... netem delay D loss P rate R`.
 *
 * Why it exists: this kernel has no sch_netem (tc answers "Specified qdisc kind is unknown"),
 * and tbf/htb can shape a rate but cannot delay. So each namespace gets a TUN device, and this
 * process, which opens both, is the wire: every IP packet the client's kernel sends comes out of
 * the client's TUN fd here, waits, and is written into the server's TUN fd (and back).
 *
 *   rf-wanem [options] CLIENT_NETNS SERVER_NETNS TUN_NAME
 *     -r MBIT     link rate in Mbit/s (10^6 bit/s), both directions; 0 = unlimited   (400)
 *     -d MS       one-way delay server -> client (the data direction), milliseconds   (20)
 *     -u MS       one-way delay client -> server, milliseconds                         (0)
 *     -l PERCENT  random loss server -> client, percent of packets                     (0.1)
 *     -L PERCENT  random loss client -> server, percent of packets                     (0)
 *     -q MS       drop-tail queue in front of the link, in milliseconds of link time   (50)
 *     -s SEED     seed of the loss generator, so every run drops the same packet numbers (1)
 *     -p FILE     write our pid to FILE once both devices are open
 *
 * The round trip is -d + -u (the defaults give 20 ms, all on the data direction, as netem on the
 * server's interface would). A packet entering a direction is dropped at random (loss), else
 * queued behind the packets still being serialised (rate), dropped if that queue already holds
 * more than -q of link time (a router's drop-tail buffer), and delivered at
 *   (time the link finishes sending it) + (one-way delay).
 * Delivery order is arrival order, so the line never reorders.
 *
 * TUN_NAME must already exist in both namespaces (`ip -n NS tuntap add dev TUN_NAME mode tun`);
 * we only attach to it, so the devices and their addresses die with `ip netns del`.
 * SIGTERM/SIGINT: print per-direction counters to stderr and exit 0.
 * Build: gcc -O2 -Wall -o rf-wanem rf-wanem.c
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

enum {
    SLOT_BYTES = 2048,        /* one queued packet; wan.sh keeps the devices' MTU at 2000 or less */
    READ_BURST_PACKETS = 256, /* packets taken from one device before looking at the other */
    MIN_SLOTS = 4096,         /* ring size floor, for control packets (ACKs) on an idle link */
    TYPICAL_PACKET_BYTES = 750 /* sizes the ring: half an MTU, so a mix of data and ACKs fits */
};

static const uint64_t NANOS_PER_SECOND = 1000000000ull;

struct packet {
    uint64_t due_ns; /* CLOCK_MONOTONIC time to write it out */
    uint32_t bytes;
    unsigned char data[SLOT_BYTES];
};

/* One direction of the line: packets read from `in` wait in a FIFO ring, then go to `out`. */
struct direction {
    const char *name;
    int in, out;
    uint64_t delay_ns;
    uint32_t loss_per_million;
    struct packet *ring;
    uint32_t slots, head, tail; /* head: oldest queued; tail: next free slot */
    uint64_t link_free_ns;      /* when the link finishes serialising the last queued packet */
    uint64_t received, delivered, delivered_bytes, lost, queue_drops, ring_drops, write_errors;
};

static uint64_t rate_bits_per_second; /* 0 = no serialisation delay */
static uint64_t queue_limit_ns;
static uint64_t random_state;
static volatile sig_atomic_t stopping;

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * NANOS_PER_SECOND + (uint64_t)ts.tv_nsec;
}

/* xorshift64*: fast, and with a fixed seed the n-th packet's fate is the same in every run. */
static uint64_t next_random(void) {
    random_state ^= random_state >> 12;
    random_state ^= random_state << 25;
    random_state ^= random_state >> 27;
    return random_state * 0x2545F4914F6CDD1Dull;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

/* Opens the existing TUN device `device` in network namespace `netns` (by name, /run/netns). The
 * fd stays bound to that namespace's device after we move on to the next namespace. */
static int open_tun(const char *netns, const char *device) {
    char path[256];
    snprintf(path, sizeof path, "/run/netns/%s", netns);
    int namespace_fd = open(path, O_RDONLY | O_CLOEXEC);
    if (namespace_fd < 0) die(path);
    if (setns(namespace_fd, CLONE_NEWNET) < 0) die("setns");
    close(namespace_fd);
    int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) die("/dev/net/tun");
    struct ifreq request;
    memset(&request, 0, sizeof request);
    request.ifr_flags = IFF_TUN | IFF_NO_PI; /* bare IP packets, no extra header */
    strncpy(request.ifr_name, device, IFNAMSIZ - 1);
    if (ioctl(fd, TUNSETIFF, &request) < 0) die("TUNSETIFF");
    return fd;
}

/* Ring slots for the most packets one direction can hold: the bytes of (queue + delay) at the
 * link rate, counted in half-MTU packets. A full ring drops and counts it (ring_drops), so a
 * setting too small for its traffic shows in the counters instead of skewing results unseen. */
static uint32_t ring_slots(uint64_t delay_ns) {
    double seconds = (double)(delay_ns + queue_limit_ns) / NANOS_PER_SECOND;
    double bytes = rate_bits_per_second ? seconds * (double)rate_bits_per_second / 8 : 64.0 * 1024 * 1024;
    double slots = bytes / TYPICAL_PACKET_BYTES;
    return slots < MIN_SLOTS ? MIN_SLOTS : (uint32_t)slots + MIN_SLOTS;
}

/* Takes every packet waiting on the direction's input device (up to a burst) and queues it. */
static void receive(struct direction *d, uint64_t now) {
    for (int i = 0; i < READ_BURST_PACKETS; i++) {
        struct packet *slot = &d->ring[d->tail];
        ssize_t n = read(d->in, slot->data, SLOT_BYTES);
        if (n <= 0) return; /* EAGAIN: drained */
        d->received++;
        if (d->loss_per_million && next_random() % 1000000 < d->loss_per_million) {
            d->lost++;
            continue;
        }
        uint64_t start = d->link_free_ns > now ? d->link_free_ns : now;
        if (start - now > queue_limit_ns) {
            d->queue_drops++;
            continue;
        }
        uint32_t next_tail = (d->tail + 1) % d->slots;
        if (next_tail == d->head) {
            d->ring_drops++;
            continue;
        }
        uint64_t serialise_ns = rate_bits_per_second
            ? (uint64_t)n * 8 * NANOS_PER_SECOND / rate_bits_per_second : 0;
        d->link_free_ns = start + serialise_ns;
        slot->due_ns = d->link_free_ns + d->delay_ns;
        slot->bytes = (uint32_t)n;
        d->tail = next_tail;
    }
}

/* Writes out every queued packet whose time has come, oldest first. */
static void deliver(struct direction *d, uint64_t now) {
    while (d->head != d->tail && d->ring[d->head].due_ns <= now) {
        struct packet *p = &d->ring[d->head];
        if (write(d->out, p->data, p->bytes) < 0) {
            d->write_errors++; /* the receiving stack refused it: the same as a loss */
        } else {
            d->delivered++;
            d->delivered_bytes += p->bytes;
        }
        d->head = (d->head + 1) % d->slots;
    }
}

static void on_signal(int signal_number) {
    (void)signal_number;
    stopping = 1;
}

static double number_argument(const char *text, char option) {
    char *end;
    double value = strtod(text, &end);
    if (*text == '\0' || *end != '\0' || value < 0) {
        fprintf(stderr, "rf-wanem: -%c wants a non-negative number, not '%s'\n", option, text);
        exit(2);
    }
    return value;
}

int main(int argc, char **argv) {
    double rate_mbit = 400, down_delay_ms = 20, up_delay_ms = 0, down_loss_percent = 0.1;
    double up_loss_percent = 0, queue_ms = 50;
    uint64_t seed = 1;
    const char *pid_file = NULL;
    int option;
    while ((option = getopt(argc, argv, "r:d:u:l:L:q:s:p:")) != -1) {
        switch (option) {
        case 'r': rate_mbit = number_argument(optarg, 'r'); break;
        case 'd': down_delay_ms = number_argument(optarg, 'd'); break;
        case 'u': up_delay_ms = number_argument(optarg, 'u'); break;
        case 'l': down_loss_percent = number_argument(optarg, 'l'); break;
        case 'L': up_loss_percent = number_argument(optarg, 'L'); break;
        case 'q': queue_ms = number_argument(optarg, 'q'); break;
        case 's': seed = (uint64_t)number_argument(optarg, 's'); break;
        case 'p': pid_file = optarg; break;
        default: goto usage;
        }
    }
    if (argc - optind != 3) goto usage;
    const char *client_netns = argv[optind], *server_netns = argv[optind + 1], *device = argv[optind + 2];

    rate_bits_per_second = (uint64_t)(rate_mbit * 1e6);
    queue_limit_ns = (uint64_t)(queue_ms * 1e6);
    random_state = seed * 0x9E3779B97F4A7C15ull + 1; /* never zero: xorshift would stay at 0 */
    /* The default 50 us timer slack would add up to 50 us to every wake-up; a 1500-byte packet
     * takes 30 us at 400 Mbit/s, so ask for 1 us. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);

    int client_fd = open_tun(client_netns, device);
    int server_fd = open_tun(server_netns, device);
    struct direction lines[2] = {
        {.name = "server->client", .in = server_fd, .out = client_fd,
         .delay_ns = (uint64_t)(down_delay_ms * 1e6),
         .loss_per_million = (uint32_t)(down_loss_percent * 1e4 + 0.5)},
        {.name = "client->server", .in = client_fd, .out = server_fd,
         .delay_ns = (uint64_t)(up_delay_ms * 1e6),
         .loss_per_million = (uint32_t)(up_loss_percent * 1e4 + 0.5)},
    };
    for (int i = 0; i < 2; i++) {
        lines[i].slots = ring_slots(lines[i].delay_ns);
        lines[i].ring = malloc((size_t)lines[i].slots * sizeof(struct packet));
        if (!lines[i].ring) die("malloc");
    }

    struct sigaction action = {.sa_handler = on_signal};
    sigaction(SIGTERM, &action, NULL);
    sigaction(SIGINT, &action, NULL);
    if (pid_file) {
        FILE *file = fopen(pid_file, "w");
        if (!file) die(pid_file);
        fprintf(file, "%d\n", (int)getpid());
        fclose(file);
    }

    struct pollfd devices[2] = {{.fd = server_fd, .events = POLLIN}, {.fd = client_fd, .events = POLLIN}};
    while (!stopping) {
        uint64_t now = now_ns();
        for (int i = 0; i < 2; i++) deliver(&lines[i], now);
        /* Sleep until a packet arrives or the oldest queued one is due. */
        uint64_t wake_ns = UINT64_MAX;
        for (int i = 0; i < 2; i++)
            if (lines[i].head != lines[i].tail && lines[i].ring[lines[i].head].due_ns < wake_ns)
                wake_ns = lines[i].ring[lines[i].head].due_ns;
        struct timespec timeout, *timeout_pointer = NULL;
        if (wake_ns != UINT64_MAX) {
            uint64_t wait_ns = wake_ns > now ? wake_ns - now : 0;
            timeout.tv_sec = (time_t)(wait_ns / NANOS_PER_SECOND);
            timeout.tv_nsec = (long)(wait_ns % NANOS_PER_SECOND);
            timeout_pointer = &timeout;
        }
        int ready = ppoll(devices, 2, timeout_pointer, NULL);
        if (ready < 0) {
            if (errno == EINTR) continue;
            die("ppoll");
        }
        now = now_ns();
        for (int i = 0; i < 2; i++)
            if (devices[i].revents & POLLIN) receive(&lines[i], now);
    }
    for (int i = 0; i < 2; i++) {
        struct direction *d = &lines[i];
        fprintf(stderr, "rf-wanem %s: received %llu, delivered %llu (%.1f MiB), lost %llu, "
                "queue drops %llu, ring drops %llu, write errors %llu\n", d->name,
                (unsigned long long)d->received, (unsigned long long)d->delivered,
                d->delivered_bytes / 1048576.0, (unsigned long long)d->lost,
                (unsigned long long)d->queue_drops, (unsigned long long)d->ring_drops,
                (unsigned long long)d->write_errors);
    }
    return 0;

usage:
    fprintf(stderr, "usage: %s [-r MBIT] [-d DOWN_MS] [-u UP_MS] [-l DOWN_LOSS_%%] [-L UP_LOSS_%%] "
            "[-q QUEUE_MS] [-s SEED] [-p PID_FILE] CLIENT_NETNS SERVER_NETNS TUN_NAME\n", argv[0]);
    return 2;
}

# A private nginx on a loopback address with its own prefix, for the demo and the benchmark. Sourced.

# rf_free_port: prints a free TCP port on 127.0.0.1.
rf_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# rf_tls_certificate DIR [IP...]: a self-signed certificate for localhost, 127.0.0.1 and each IP,
# in DIR/cert.pem (pass it to clients as their CA) and DIR/key.pem.
rf_tls_certificate() {
    local dir=$1 names="DNS:localhost,IP:127.0.0.1" ip
    shift
    for ip in "$@"; do names="$names,IP:$ip"; done
    mkdir -p "$dir"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout "$dir/key.pem" -out "$dir/cert.pem" -days 30 \
        -subj "/CN=localhost" -addext "subjectAltName=$names" >/dev/null 2>&1
}

# rf_nginx_conf_head DIR: prints the start of an nginx.conf with its pid, logs and temporary files
# in DIR (made here), up to and including the open `http {` block's logging (root only: user root).
rf_nginx_conf_head() {
    local dir=$1 user=""
    mkdir -p "$dir/tmp"
    [ "$(id -u)" -eq 0 ] && user="user root;"
    cat <<CONF
$user
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    log_format ranges '\$request_method \$uri \$status \$body_bytes_sent "\$http_range" \$connection \$server_protocol';
    access_log $dir/access.log ranges;
    client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
CONF
}

# rf_nginx_start DIR PORT DOCROOT [ADDRESS [NETNS]]: serves DOCROOT on ADDRESS:PORT (ADDRESS
# defaults to 127.0.0.1); config, logs and pid in DIR. With NETNS, nginx runs inside that network
# namespace (the benchmark's emulated WAN) and is checked from there.
# /norange/ serves the same files with ranges disabled.
# With RF_NGINX_TLS="CERTDIR H1PORT H2PORT" (a rf_tls_certificate directory), the same files are
# also served over TLS: HTTP/1.1 only on H1PORT, and HTTP/2 offered by ALPN on H2PORT (as CDNs
# do; HTTP/1.1 clients get HTTP/1.1 there too), with a shared TLS session cache.
# The access log's last two fields are nginx's TCP connection number and the protocol.
rf_nginx_start() {
    local dir=$1 port=$2 docroot=$3 address=${4:-127.0.0.1} netns=${5:-}
    local inside=()
    [ -n "$netns" ] && inside=(ip netns exec "$netns")
    mkdir -p "$dir"
    local tls="" cert_dir h1_port h2_port
    if [ -n "${RF_NGINX_TLS:-}" ]; then
        read -r cert_dir h1_port h2_port <<<"$RF_NGINX_TLS"
        tls="ssl_certificate $cert_dir/cert.pem; ssl_certificate_key $cert_dir/key.pem;
    ssl_session_cache shared:rf:10m;
    ssl_protocols TLSv1.2 TLSv1.3;  # as CDNs offer (nginx 1.22's default stops at TLS 1.2)
    server { listen $address:$h1_port ssl; root $docroot; }
    server { listen $address:$h2_port ssl http2; root $docroot; }"
    fi
    {
    rf_nginx_conf_head "$dir"
    cat <<CONF
    sendfile on;
    default_type application/octet-stream;
    server {
        listen $address:$port;
        root $docroot;
        location /norange/ { alias $docroot/; max_ranges 0; }
    }
    $tls
}
CONF
    } >"$dir/nginx.conf"
    "${inside[@]}" /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf"
    local i
    for i in $(seq 1 100); do
        "${inside[@]}" curl -s -o /dev/null "http://$address:$port/" && return 0
        sleep 0.05
    done
    echo "nginx did not start on $address:$port${netns:+ in netns $netns} (see $dir/error.log)" >&2
    return 1
}

# rf_nginx_stop DIR: stops the nginx started with rf_nginx_start DIR, by its pid.
rf_nginx_stop() {
    local dir=$1
    [ -f "$dir/nginx.pid" ] || return 0
    local pid
    pid=$(cat "$dir/nginx.pid")
    kill -QUIT "$pid" 2>/dev/null || return 0
    local i
    for i in $(seq 1 100); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.05
    done
    kill -KILL "$pid" 2>/dev/null || true
}

# rf_nginx_cache_start DIR PORT ORIGIN [SLICE]: a caching reverse proxy on 127.0.0.1:PORT in front
# of ORIGIN (http://HOST:PORT): nginx's proxy_cache with the slice module, as docs/fleet.md
# explains. Every client's ranges are served from SLICE-sized pieces (8m unless told) that are
# fetched from ORIGIN once, whoever asks first; the others wait for them (proxy_cache_lock).
# Config, logs, pid and the cache in DIR; stop it with rf_nginx_stop DIR.
rf_nginx_cache_start() {
    local dir=$1 port=$2 origin=$3 slice=${4:-8m}
    mkdir -p "$dir/cache"
    {
    rf_nginx_conf_head "$dir"
    cat <<CONF
    proxy_cache_path $dir/cache levels=1:2 keys_zone=fleet:10m max_size=10g inactive=1h use_temp_path=off;
    server {
        listen 127.0.0.1:$port;
        location / {
            slice $slice;
            proxy_cache fleet;
            proxy_cache_key \$uri\$slice_range;
            proxy_set_header Range \$slice_range;
            proxy_cache_valid 200 206 1h;
            proxy_cache_lock on;
            proxy_cache_lock_timeout 10m;
            proxy_cache_lock_age 10m;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass $origin;
        }
    }
}
CONF
    } >"$dir/nginx.conf"
    /usr/sbin/nginx -p "$dir" -c "$dir/nginx.conf"
    local i
    for i in $(seq 1 100); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
        sleep 0.05
    done
    echo "the caching nginx did not start on 127.0.0.1:$port (see $dir/error.log)" >&2
    return 1
}

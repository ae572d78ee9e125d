# A private nginx on a loopback address with its own prefix, for the demo and the benchmark. Sourced.

# rf_free_port: prints a free TCP port on 127.0.0.1.
rf_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'
}

# rf_nginx_start DIR PORT DOCROOT [ADDRESS [NETNS]]: serves DOCROOT on ADDRESS:PORT (ADDRESS
# defaults to 127.0.0.1); config, logs and pid in DIR. With NETNS, nginx runs inside that network
# namespace (the benchmark's emulated WAN) and is checked from there.
# /norange/ serves the same files with ranges disabled.
rf_nginx_start() {
    local dir=$1 port=$2 docroot=$3 address=${4:-127.0.0.1} netns=${5:-}
    local inside=()
    [ -n "$netns" ] && inside=(ip netns exec "$netns")
    mkdir -p "$dir/tmp"
    local user=""
    [ "$(id -u)" -eq 0 ] && user="user root;"
    cat >"$dir/nginx.conf" <<CONF
$user
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/error.log warn;
events { worker_connections 1024; }
http {
    log_format ranges '\$request_method \$uri \$status \$body_bytes_sent "\$http_range"';
    access_log $dir/access.log ranges;
    client_body_temp_path $dir/tmp; proxy_temp_path $dir/tmp; fastcgi_temp_path $dir/tmp;
    uwsgi_temp_path $dir/tmp; scgi_temp_path $dir/tmp;
    sendfile on;
    default_type application/octet-stream;
    server {
        listen $address:$port;
        root $docroot;
        location /norange/ { alias $docroot/; max_ranges 0; }
    }
}
CONF
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

// SPDX-License-Identifier: MIT
/* srbench: options and the choice of side (srbench.h describes the tool). */
#include "srbench.h"

const char *g_role = "srbench";

struct srbench_opt opt = {
	.port = 18600, .duration = 1.0, .spin_us = 0, .lat_size = 8, .do_rdma = true,
	.do_tcp = true,
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: srbench -s [-a addr] [-p port] [-o]\n"
		"       srbench -c -a addr [-p port] [-t write|read|send|lat|all[,...]]\n"
		"               [-S size,...] [-d seconds] [-T both|rdma|tcp] [-w window]\n"
		"               [-P spin_us] [-L size] [-M | -K]\n"
		"  -s          server (rdma_cm on port, TCP baseline on port+1)\n"
		"  -o          server: exit when a client has finished its run\n"
		"  -c          client\n"
		"  -a addr     address to listen on / connect to (server default: any)\n"
		"  -p port     rdma_cm port (default 18600); the TCP baseline uses port+1\n"
		"  -t list     measurements (default all = write,read,send,lat)\n"
		"  -S list     message sizes for bandwidth, suffix k/m for KiB/MiB, %u..%u\n"
		"              (default 64,256,1k,4k,16k,64k,256k,1m,4m)\n"
		"  -d seconds  time per measurement (default 1)\n"
		"  -T which    both (default), rdma (softrdma/verbs only) or tcp (baseline only)\n"
		"  -w window   outstanding WRs (default 8 MiB/size, clamped to 4..64)\n"
		"  -P us       busy-poll this long before sleeping on the completion channel "
		"(default 0);\n"
		"              ping-pong: the server polls too, and TCP spins on non-blocking "
		"sockets\n"
		"  -L size     ping-pong message size (default 8, %u..%u)\n"
		"  -M          print the tables in Markdown\n"
		"  -K          one key=value line per measurement (client and server), with CPU "
		"seconds\n",
		MIN_SIZE, MAX_SIZE, LAT_MIN, MAX_SIZE);
}

static void parse_sizes(char *arg)
{
	opt.nsizes = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		char *end;
		unsigned long long v = strtoull(tok, &end, 10);

		if (*end == 'k' || *end == 'K')
			v <<= 10, end++;
		else if (*end == 'm' || *end == 'M')
			v <<= 20, end++;
		if (end == tok || *end || v < MIN_SIZE || v > MAX_SIZE)
			die("bad size '%s' (%u..%u, suffix k or m)", tok, MIN_SIZE, MAX_SIZE);
		if (opt.nsizes == 32)
			die("too many sizes (max 32)");
		opt.sizes[opt.nsizes++] = (size_t)v;
	}
}

static void parse_ops(char *arg)
{
	opt.ops = 0;
	for (char *tok = strtok(arg, ","); tok; tok = strtok(NULL, ",")) {
		if (!strcmp(tok, "all"))
			opt.ops |= 1u << OP_WRITE | 1u << OP_READ | 1u << OP_SEND | 1u << OP_LAT;
		else if (!strcmp(tok, "write"))
			opt.ops |= 1u << OP_WRITE;
		else if (!strcmp(tok, "read"))
			opt.ops |= 1u << OP_READ;
		else if (!strcmp(tok, "send"))
			opt.ops |= 1u << OP_SEND;
		else if (!strcmp(tok, "lat"))
			opt.ops |= 1u << OP_LAT;
		else
			die("bad -t '%s' (write, read, send, lat, all)", tok);
	}
}

int main(int argc, char **argv)
{
	static const size_t def_sizes[] = { 64, 256, 1 << 10, 4 << 10, 16 << 10, 64 << 10,
					    256 << 10, 1 << 20, 4 << 20 };
	int c;

	signal(SIGPIPE, SIG_IGN);
	setvbuf(stdout, NULL, _IOLBF, 0);
	opt.ops = 1u << OP_WRITE | 1u << OP_READ | 1u << OP_SEND | 1u << OP_LAT;
	for (unsigned int i = 0; i < sizeof(def_sizes) / sizeof(def_sizes[0]); i++)
		opt.sizes[opt.nsizes++] = def_sizes[i];
	while ((c = getopt(argc, argv, "sca:p:ot:S:d:T:w:P:L:MKh")) != -1) {
		switch (c) {
		case 's': opt.server = true; break;
		case 'c': opt.client = true; break;
		case 'a': opt.addr = optarg; break;
		case 'p': opt.port = atoi(optarg); break;
		case 'o': opt.once = true; break;
		case 't': parse_ops(optarg); break;
		case 'S': parse_sizes(optarg); break;
		case 'd': opt.duration = atof(optarg); break;
		case 'w': opt.window = (unsigned int)atoi(optarg); break;
		case 'P': opt.spin_us = (unsigned int)atoi(optarg); break;
		case 'M': opt.markdown = true; break;
		case 'K': opt.kv = true; break;
		case 'L': {
			char *end;
			unsigned long long v = strtoull(optarg, &end, 10);

			if (*end == 'k' || *end == 'K')
				v <<= 10, end++;
			if (end == optarg || *end || v < LAT_MIN || v > MAX_SIZE)
				die("bad -L '%s' (%u..%u, suffix k)", optarg, LAT_MIN, MAX_SIZE);
			opt.lat_size = (size_t)v;
			break;
		}
		case 'T':
			if (!strcmp(optarg, "both"))
				opt.do_rdma = opt.do_tcp = true;
			else if (!strcmp(optarg, "rdma"))
				opt.do_rdma = true, opt.do_tcp = false;
			else if (!strcmp(optarg, "tcp"))
				opt.do_rdma = false, opt.do_tcp = true;
			else
				die("bad -T '%s' (both, rdma, tcp)", optarg);
			break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (opt.server == opt.client || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (opt.port <= 0 || opt.port >= 65535)
		die("bad port %d", opt.port);
	if (opt.duration <= 0 || opt.duration > 60)
		die("bad -d %g (0 < seconds <= 60)", opt.duration);
	if (opt.window > 1024)
		die("bad -w %u (1..1024)", opt.window);
	if (opt.server) {
		g_role = "srbench server";
		return run_server();
	}
	g_role = "srbench client";
	if (!opt.addr)
		die("-c needs -a addr");
	return run_client();
}

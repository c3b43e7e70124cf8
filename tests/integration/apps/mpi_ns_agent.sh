#!/bin/sh
# Open MPI's remote launch agent for hosts that are network namespaces of this machine
# (mpirun --mca plm_rsh_agent <this script>): called as ssh would be, "HOST COMMAND...", it runs
# COMMAND (a shell command line, the way ssh passes it to the remote shell) in the namespace
# that SR_MPI_HOSTS ("ADDR=NAMESPACE ...", from mpirun's environment) gives for HOST.
host=$1
shift
for pair in $SR_MPI_HOSTS; do
	if [ "${pair%%=*}" = "$host" ]; then
		exec ip netns exec "${pair#*=}" sh -c "$*"
	fi
done
echo "mpi_ns_agent: no namespace for host $host in SR_MPI_HOSTS='$SR_MPI_HOSTS'" >&2
exit 1

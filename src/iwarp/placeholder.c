/* empty until the codec lands */ typedef int sr_iwarp_placeholder;

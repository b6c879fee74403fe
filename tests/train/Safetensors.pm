# tests/train/Safetensors.pm — open one F32 tensor of a safetensors file for
# the tests that rewrite an exported model's weights in place (perl-base,
# which every Debian system has, is all it needs).
#
#   my ($f, $start, $shape) = Safetensors::open_f32($path, $name);
#
# $f is the file opened for reading and writing, $start the byte offset of
# the tensor's data, $shape its dimensions (an array reference); dies with
# the reason when the file or the tensor is not as expected.
package Safetensors;
use strict;
use warnings;

sub open_f32 {
  my ($path, $name) = @_;
  open(my $f, "+<:raw", $path) or die "$path: $!\n";
  read($f, my $head, 8) == 8 or die "$path: shorter than a safetensors header\n";
  my $n = unpack("Q<", $head);
  read($f, my $header, $n) == $n or die "$path: its header is cut short\n";
  my ($tensor) = $header =~ /"\Q$name\E"\s*:\s*\{([^}]*)\}/ or die "$path: no tensor $name\n";
  $tensor =~ /"dtype"\s*:\s*"F32"/ or die "$path: $name is not F32\n";
  my ($dims) = $tensor =~ /"shape"\s*:\s*\[([^\]]*)\]/ or die "$path: $name has no shape\n";
  my ($begin) = $tensor =~ /"data_offsets"\s*:\s*\[\s*(\d+)/ or die "$path: $name has no data_offsets\n";
  return ($f, 8 + $n + $begin, [$dims =~ /(\d+)/g]);
}

1;

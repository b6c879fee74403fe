# tests/train/set_tensor.pl FILE TENSOR VALUE [INDEX] — in a safetensors
# file, set the F32 tensor TENSOR's element INDEX (counted over the tensor
# flat), or every element without INDEX, to VALUE, in place: for tests that
# give an exported model weights that make its output known.
#   perl -I tests/train tests/train/set_tensor.pl FILE TENSOR VALUE [INDEX]
use strict;
use warnings;
use Safetensors;

my ($path, $name, $value, $index) = @ARGV;
defined $value or die "usage: set_tensor.pl FILE TENSOR VALUE [INDEX]\n";
my ($f, $start, $shape) = Safetensors::open_f32($path, $name);
my $count = 1;
$count *= $_ for @$shape;
for my $i (defined $index ? ($index) : (0 .. $count - 1)) {
  $i < $count or die "$path: $name has $count elements, no element $i\n";
  seek($f, $start + 4 * $i, 0) or die "$path: $!\n";
  print $f pack("f<", $value);
}
close($f) or die "$path: $!\n";

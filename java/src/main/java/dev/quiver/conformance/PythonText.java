package dev.quiver.conformance;

import java.math.BigDecimal;

/** Texts the reference builds with Python's formatting, reproduced exactly. */
final class PythonText {
  private PythonText() {}

  /** {@code repr(float)}: shortest round-trip digits, positional for exponents -4..15, else {@code 1e-05}. */
  static String floatRepr(double value) {
    if (Double.isNaN(value)) {
      return "nan";
    }
    if (Double.isInfinite(value)) {
      return value > 0 ? "inf" : "-inf";
    }
    if (value == 0) {
      return (1 / value < 0) ? "-0.0" : "0.0";
    }
    BigDecimal decimal = new BigDecimal(Double.toString(value)).stripTrailingZeros();
    String digits = decimal.unscaledValue().abs().toString();
    int exponent = digits.length() - 1 - decimal.scale();
    String sign = value < 0 ? "-" : "";
    if (exponent >= -4 && exponent < 16) {
      String plain = decimal.abs().toPlainString();
      return sign + (plain.contains(".") ? plain : plain + ".0");
    }
    String mantissa = digits.length() == 1 ? digits : digits.charAt(0) + "." + digits.substring(1);
    String exponentText = String.format("%s%02d", exponent < 0 ? "-" : "+", Math.abs(exponent));
    return sign + mantissa + "e" + exponentText;
  }
}

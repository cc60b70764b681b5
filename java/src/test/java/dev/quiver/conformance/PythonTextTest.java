package dev.quiver.conformance;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class PythonTextTest {
  @Test
  void floatsPrintAsPythonReprDoes() {
    assertEquals("1.0", PythonText.floatRepr(1.0));
    assertEquals("-2.5", PythonText.floatRepr(-2.5));
    assertEquals("0.0001", PythonText.floatRepr(1e-4));
    assertEquals("1e-05", PythonText.floatRepr(1e-5));
    assertEquals("1e+16", PythonText.floatRepr(1e16));
    assertEquals("1234567890123456.0", PythonText.floatRepr(1234567890123456.0));
    assertEquals("0.1", PythonText.floatRepr(0.1));
    assertEquals("-0.0", PythonText.floatRepr(-0.0));
    assertEquals("inf", PythonText.floatRepr(Double.POSITIVE_INFINITY));
    assertEquals("nan", PythonText.floatRepr(Double.NaN));
    assertEquals("1.5e-07", PythonText.floatRepr(1.5e-7));
  }
}

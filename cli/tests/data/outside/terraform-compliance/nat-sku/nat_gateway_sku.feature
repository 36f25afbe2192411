Feature: NAT gateways use the Standard SKU
  A NAT gateway's SKU is part of the whole object trellis shows (ARM's shape: `sku.name`), on a create,
  an update that changes something else, and a replace.

  Scenario: Every NAT gateway has the Standard SKU
    Given I have azurerm_nat_gateway defined
    Then it must contain sku
    And it must contain name
    And its value must be Standard
